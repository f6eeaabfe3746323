//go:build !unix

package main

// lockDataDir does not lock on systems without flock (see datadir_unix.go).
func lockDataDir(dir string) (unlock func(), err error) { return func() {}, nil }
