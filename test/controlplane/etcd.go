package controlplane

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// CompactEtcd compacts etcd's history up to its current revision, as the
// API server does every five minutes (--etcd-compaction-interval): a
// watch that resumes from an older resource version is then answered 410
// Gone ("too old resource version") where etcd serves it, and the client
// must list again. It returns the revision compacted at.
func (c *ControlPlane) CompactEtcd(ctx context.Context) (int64, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{c.EtcdURL()},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	// Any read returns the store's current revision in its header.
	resp, err := cli.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	_, err = cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	return rev, err
}
