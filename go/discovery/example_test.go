package discovery_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/client"
	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/etcdembed"
)

// startEtcd starts an etcd member of the example's own in a temporary
// directory and returns a client of it and a function that stops both; a
// job's trainers dial the job's etcd instead.
func startEtcd(ctx context.Context) (*clientv3.Client, func()) {
	dir, err := os.MkdirTemp("", "discovery-example")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, UnsafeNoFsync: true})
	if err != nil {
		log.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	return cli, func() {
		cli.Close()
		srv.Close()
		os.RemoveAll(dir)
	}
}

// A trainer finds the master of the job under /job through etcd: the
// Resolver waits until a leading master publishes its address, attached to
// the lease of its session, and a client.Client built on it asks again
// after every failure, so it follows the master across a failover.
func Example() {
	ctx := context.Background()
	cli, stop := startEtcd(ctx)
	defer stop()

	r := discovery.NewResolver(cli, "/job")
	c := client.New(r, client.Config{}) // connects on its first call
	defer c.Close()

	resolved := make(chan string)
	go func() {
		addr, err := r.Resolve(ctx) // waits: no master is leading yet
		if err != nil {
			log.Fatal(err)
		}
		resolved <- addr
	}()

	// What the leading master does when it takes the lock.
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := cli.Put(ctx, discovery.AddrKey("/job"), "10.0.0.7:8080", clientv3.WithLease(lease.ID)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("the master is at", <-resolved)
	// Output: the master is at 10.0.0.7:8080
}

// Masters lists the masters campaigning for the job's lock, as their lock
// keys show them: the leader first, then the standbys in the order they
// would take over.
func ExampleMasters() {
	ctx := context.Background()
	cli, stop := startEtcd(ctx)
	defer stop()

	// What two masters write when they campaign, one after the other.
	for i, host := range []string{"m1", "m2"} {
		c := discovery.Candidate{Host: host, PID: 100 + i, HTTP: host + ":8081"}
		if _, err := cli.Put(ctx, fmt.Sprintf("%s%d", discovery.LockPrefix("/job"), i), c.Value()); err != nil {
			log.Fatal(err)
		}
	}

	masters, err := discovery.Masters(ctx, cli, "/job")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range masters {
		fmt.Printf("%s pid %d, status page %s, leading %t\n", m.Host, m.PID, m.HTTP, m.Leading)
	}
	// Output:
	// m1 pid 100, status page m1:8081, leading true
	// m2 pid 101, status page m2:8081, leading false
}
