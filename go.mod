module github.com/threadcap/threadcap

go 1.26.0

tool github.com/cilium/ebpf/cmd/bpf2go

require (
	github.com/cilium/ebpf v0.22.0
	github.com/klauspost/compress v1.20.3
	github.com/prometheus/procfs v0.23.0
	github.com/sirupsen/logrus v1.10.2
	golang.org/x/sys v0.49.0
)

require gopkg.in/yaml.v3 v3.0.1
