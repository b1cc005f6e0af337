package masterbench

import (
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	status := "Name:\tmaster\nVmPeak:\t  900000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n"
	m, err := parseStatus([]byte(status))
	if err != nil || m.RSS != 100<<20 || m.Peak != 200<<20 || m.Threads != 9 {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := parseStatus([]byte("Name:\tmaster\nVmRSS:\t  12 kB\n")); err == nil {
		t.Fatal("a status without VmHWM was accepted")
	}
	if _, err := parseStatus([]byte("VmRSS:\tlots kB\nVmHWM:\t1 kB\n")); err == nil {
		t.Fatal("a bad number was accepted")
	}
}

func TestParseMetrics(t *testing.T) {
	page := `# HELP etcd_disk_wal_write_bytes_total Total number of bytes written in WAL.
# TYPE etcd_disk_wal_write_bytes_total gauge
etcd_disk_wal_write_bytes_total 1.2345e+06
etcd_debugging_mvcc_total_put_size_in_bytes 4096
etcd_server_has_leader{member="x"} 1
`
	got, err := parseMetrics(strings.NewReader(page), walBytesMetric, putBytesMetric)
	if err != nil || got[walBytesMetric] != 1234500 || got[putBytesMetric] != 4096 {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := parseMetrics(strings.NewReader(page), "etcd_missing"); err == nil || !strings.Contains(err.Error(), "etcd_missing") {
		t.Fatalf("a missing metric: %v", err)
	}
}
