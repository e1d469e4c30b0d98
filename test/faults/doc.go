// Package faults runs the real operator binary against a real control
// plane (test/controlplane: etcd, kube-apiserver) through the faults that
// hit operators in production, and checks what users would: a leader
// frozen past its lease writes nothing once it lost it; watches that must
// list again after etcd compaction miss no change; a slow, resetting or
// silent API server loses and duplicates nothing; certificates issued by a
// clock minutes off are accepted and rotate with overlap. Writes are
// counted per identity in the API server's audit log. Each test starts its
// own control plane, talks only to 127.0.0.1 and bounds every wait; the
// package has no non-test code.
package faults
