package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/hummer-db/hummer/exec/checkpoint"
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
