//go:build !linux

package main

import "errors"

// batchScheduling: SCHED_BATCH is Linux's (see sched_linux.go).
func batchScheduling() error {
	return errors.New("batch scheduling is only on Linux")
}
