// Package k8s holds the project's Kubernetes manifests (the YAML files of
// this directory) and, in manifests_test.go, the test that decodes each of
// them strictly against the upstream API types of k8s.io/api and checks
// what the API server would only find out on apply, or never: selectors
// that select nothing, probes on undeclared ports, mounts of undeclared
// volumes, Secrets and keys that do not exist, and flags the binaries do
// not have.
//
// It is a module of its own so that the master's module does not depend
// on k8s.io/api:
//
//	cd docker/k8s && go vet ./... && go test ./...
package k8s
