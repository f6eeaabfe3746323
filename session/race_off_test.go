//go:build !race

package session_test

// raceDetector: see race_on_test.go.
const raceDetector = false
