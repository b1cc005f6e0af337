module github.com/trainmaster/master

go 1.26

require (
	github.com/golang/snappy v1.0.0
	github.com/namsral/flag v1.7.4-pre
)
