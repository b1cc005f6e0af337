package main

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/trainmaster/master/go/discovery"
	"github.com/trainmaster/master/internal/leader"
	"github.com/trainmaster/master/internal/monitor"
	"github.com/trainmaster/master/internal/statusweb"
	"github.com/trainmaster/master/internal/trainerport"
)

// door is the master's HTTP side door (-http-addr): metrics, probes and the
// status page, served by every master, standbys included, from start to
// exit.
type door struct {
	mon  *monitor.Monitor
	lis  net.Listener // nil without -http-addr
	addr string       // as advertised in the lock key
	cli  atomic.Pointer[clientv3.Client]
}

// openDoor creates the monitor and, with -http-addr, opens the side door's
// port, so that a port in use fails the start.
func openDoor(o *options) (*door, error) {
	d := &door{mon: monitor.New(monitor.Config{MaxTrainers: o.trainersTracked, TrainerSeries: o.maxTrainers})}
	if o.httpAddr == "" {
		return d, nil
	}
	lis, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		return nil, err
	}
	d.lis = lis
	d.addr = leader.Advertised(o.httpAdvertise, o.httpAddr, lis.Addr())
	return d, nil
}

// serve serves the side door until ctx ends; port is the trainer port's
// configuration, whose TLS and token lock the door too.
func (d *door) serve(ctx context.Context, o *options, port trainerport.Config, log logrus.FieldLogger) {
	if d.lis == nil {
		return
	}
	srv, err := statusweb.New(statusweb.Config{Monitor: d.mon, TLS: statusweb.ServerTLS(port.TLS), Token: port.Token, Log: log,
		Masters: func(ctx context.Context) ([]discovery.Master, error) {
			cli := d.cli.Load()
			if cli == nil {
				return nil, errNotConnected
			}
			return discovery.Masters(ctx, cli, o.namespace)
		}})
	if err != nil {
		log.WithError(err).Error("status page and metrics not served")
		d.lis.Close()
		return
	}
	scheme := "http"
	if port.TLS != nil {
		scheme = "https"
	}
	log.WithFields(logrus.Fields{"listen": o.httpAddr, "url": scheme + "://" + d.addr + "/", "token": port.Token != ""}).
		Info("status page, /metrics, /healthz and /readyz served")
	go func() {
		if err := srv.Serve(ctx, d.lis); err != nil {
			log.WithError(err).Error("the status page and metrics stopped")
		}
	}()
}
