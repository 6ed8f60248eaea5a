// Package validate checks the Kubernetes manifests of deploy/kubernetes
// offline, in its tests: each document decodes strictly into its API type
// (an unknown or misspelt field fails), every kind has its apiVersion, what
// the Deployment refers to exists, and its probes, ports, mounts and
// security settings fit what gatehost serve needs. It is a module of its
// own so that the repository's module does not depend on k8s.io/api. The
// gatehost config inside the ConfigMap is loaded by the repository's own
// config package in cmd/gatehost (TestDeployConfig).
package validate
