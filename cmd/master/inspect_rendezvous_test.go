package main

import (
	"encoding/json"
	"net/rpc"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/trainmaster/master/go/wire"
	"github.com/trainmaster/master/internal/etcdembed/etcdtest"
)

// TestInspectRendezvous: master inspect reads a run of the job's elastic
// agents from etcd and shows its round, its nodes with their ranks, and
// its last change; -json gives the status page's record of it.
func TestInspectRendezvous(t *testing.T) {
	srv, _ := etcdtest.Start(t)
	endpoints := strings.Join(srv.Endpoints(), ",")
	addr := startMaster(t, "-endpoints", endpoints, "-dataset", writeDataset(t, 1)).awaitServing(30 * time.Second)
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, node := range []string{"node-b", "node-a"} {
		var v wire.RendezvousView
		j := wire.RendezvousJoin{RendezvousPoll: wire.RendezvousPoll{Run: "job-1", Node: node, Token: "t-" + node}, MinNodes: 1, MaxNodes: 2, GraceMs: 60_000}
		if err := c.Call("Rendezvous.Join", j, &v); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(binPath, "inspect", "-endpoints", endpoints).CombinedOutput()
	want := regexp.MustCompile(`rendezvous: run job-1: round 0 complete, nodes 1:2: node-a \(rank 0\), node-b \(rank 1\); last: round 0 complete with 2 nodes: it has the most nodes \(`)
	if err != nil || !want.Match(out) {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	out, err = exec.Command(binPath, "inspect", "-endpoints", endpoints, "-json").Output()
	var in struct {
		Rendezvous []struct {
			Run   string `json:"run"`
			Nodes []struct {
				Name string `json:"name"`
				Rank int    `json:"rank"`
			} `json:"nodes"`
		} `json:"rendezvous"`
	}
	if err != nil || json.Unmarshal(out, &in) != nil || len(in.Rendezvous) != 1 || len(in.Rendezvous[0].Nodes) != 2 || in.Rendezvous[0].Nodes[1].Rank != 1 {
		t.Fatalf("inspect -json: %v\n%s", err, out)
	}
}
