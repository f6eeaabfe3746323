package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/hummer-db/hummer/exec/checkpoint"
	"github.com/hummer-db/hummer/sql"
)

// check opens the --checkpoint-store and reaches it: a server refuses to
// start on a store it could not write its first checkpoint to (a typo in the
// URL, a missing bucket, no credentials) rather than failing every job later.
func (o checkpointOptions) check() error {
	if *o.url == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := checkpoint.Open(ctx, *o.url)
	if err != nil {
		return fmt.Errorf("--checkpoint-store: %w", err)
	}
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		return fmt.Errorf("--checkpoint-store: %w", err)
	}
	return nil
}

// open opens the --catalog-store and reaches it, refusing, as check does for
// checkpoints, a store the server could not keep its catalog in. Without the
// flag the store is nil: the catalog stays in the data directory. close
// releases the store once the engine is closed.
func (o catalogOptions) open() (store sql.CatalogStore, close func(), err error) {
	if *o.url == "" {
		return nil, func() {}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj, err := checkpoint.OpenObject(ctx, *o.url, catalogObject)
	if err != nil {
		return nil, nil, fmt.Errorf("--catalog-store: %w", err)
	}
	if err := obj.Check(ctx); err != nil {
		obj.Close()
		return nil, nil, fmt.Errorf("--catalog-store: %w", err)
	}
	return obj, func() { obj.Close() }, nil
}

// catalogObject is the catalog's object under --catalog-store's prefix.
const catalogObject = "catalog.json"

// checkAdvertised refuses a TaskManager whose data address listens on every
// interface with nothing to tell the others where to reach it: they would
// dial 0.0.0.0, which is themselves.
func checkAdvertised(dataAddr, advertise string) error {
	host, _, err := net.SplitHostPort(dataAddr)
	if err != nil {
		return fmt.Errorf("--data-addr: %w", err)
	}
	if ip := net.ParseIP(host); (host == "" || ip != nil && ip.IsUnspecified()) && advertise == "" {
		return fmt.Errorf("--data-addr %s listens on every interface: give --advertise-addr, the host other "+
			"TaskManagers reach this one at (in Kubernetes the pod's IP: status.podIP through the downward API)", dataAddr)
	}
	return nil
}
