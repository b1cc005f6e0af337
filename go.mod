module github.com/trainmaster/master

go 1.26

require (
	github.com/golang/snappy v1.0.0
	github.com/namsral/flag v1.7.4-pre
	github.com/pkg/errors v0.9.1
	github.com/sirupsen/logrus v1.10.2
)

require golang.org/x/sys v0.13.0 // indirect
