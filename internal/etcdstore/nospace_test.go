package etcdstore

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/recordio"
	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
	"github.com/trainmaster/master/internal/master"
)

// TestOutOfSpace: etcd's space quota is exhausted mid-job. The master's
// calls fail with a message that says so and what to do; once space is
// freed and the alarm disarmed, it serves again, having lost nothing.
func TestOutOfSpace(t *testing.T) {
	srv, cli := etcdtest.Start(t, etcdtest.WithConfig(func(c *etcdembed.Config) { c.QuotaBackendBytes = 8 << 20 }))
	store, _ := lead(t, cli, "")
	log := logrus.New()
	log.SetOutput(io.Discard)
	svc, err := master.New(master.Config{ChunksPerTask: 1, Store: store, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	path := filepath.Join(t.TempDir(), "d.recordio")
	if err := recordio.WriteFile(path, 100, func(i int) []byte { return []byte(strings.Repeat("x", 100)) }, recordio.WithMaxChunkBytes(1000)); err != nil {
		t.Fatal(err)
	}
	if err := svc.ReportDataset(ctx, []string{path}); err != nil {
		t.Fatal(err)
	}
	first, err := svc.GetTask(ctx, wire.Task{})
	if err != nil {
		t.Fatal(err)
	}

	junk := strings.Repeat("j", 512<<10)
	filled := 0
	for ; filled < 64; filled++ {
		if _, err := cli.Put(ctx, "/junk/"+string(rune('a'+filled%26))+strings.Repeat("-", filled/26), junk); err != nil {
			if !strings.Contains(err.Error(), "space exceeded") {
				t.Fatalf("filling etcd: %v", err)
			}
			break
		}
	}
	if filled == 64 {
		t.Fatal("etcd never ran out of space")
	}
	_, err = svc.GetTask(ctx, first) // the finish and a dispatch: both need a write
	if err == nil || !strings.Contains(err.Error(), "etcd is out of space (NOSPACE alarm)") || !strings.Contains(err.Error(), "alarm disarm") {
		t.Fatalf("GetTask with etcd full: %v", err)
	}

	freeSpace(t, cli, srv)
	next, err := svc.GetTask(ctx, first)
	if err != nil {
		t.Fatalf("after freeing space: %v", err)
	}
	if next.Index != 1 {
		t.Fatalf("after freeing space got task %d, want 1", next.Index)
	}
	if st, err := svc.Status(ctx); err != nil || st.Done != 1 || st.Pending != 1 {
		t.Fatalf("after freeing space: %+v, %v", st, err)
	}
}

// freeSpace deletes the junk, compacts, defragments and disarms the alarm,
// as an operator would.
func freeSpace(t *testing.T, cli *clientv3.Client, srv *etcdembed.Server) {
	t.Helper()
	resp, err := cli.Delete(ctx, "/junk/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	for _, ep := range srv.Endpoints() {
		if _, err := cli.Defragment(context.Background(), ep); err != nil {
			t.Fatal(err)
		}
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alarms.Alarms {
		if _, err := cli.AlarmDisarm(ctx, (*clientv3.AlarmMember)(a)); err != nil {
			t.Fatal(err)
		}
	}
}
