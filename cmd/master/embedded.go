package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/pkg/errors"
	"github.com/sirupsen/logrus"

	"github.com/trainmaster/master/internal/etcdembed"
)

// startEmbedded starts the embedded etcd in o.dataDir, points o at it and
// writes its endpoint to <data-dir>/endpoint.
func startEmbedded(ctx context.Context, o *options, log logrus.FieldLogger) (func(), error) {
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return nil, errors.Wrap(err, "embedded etcd")
	}
	srv, err := etcdembed.Start(ctx, etcdembed.Config{
		Name: "master", Dir: filepath.Join(o.dataDir, "etcd"),
		AutoCompactionMode: "revision", AutoCompactionRetention: "1000",
	})
	if err != nil {
		return nil, errors.Wrap(err, "embedded etcd")
	}
	o.etcd.Endpoints = srv.Endpoints()
	endpointFile := filepath.Join(o.dataDir, "endpoint")
	if err := os.WriteFile(endpointFile, []byte(o.etcd.Endpoints[0]+"\n"), 0o644); err != nil {
		srv.Close()
		return nil, errors.Wrap(err, "embedded etcd")
	}
	log.WithFields(logrus.Fields{"dir": o.dataDir, "endpoint": o.etcd.Endpoints[0], "endpoint_file": endpointFile}).
		Info("embedded etcd started (no -endpoints given)")
	return srv.Close, nil
}
