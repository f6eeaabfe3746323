package main

import (
	"context"
	"fmt"
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
