//go:build race

package session_test

// raceDetector: the tests run under the race detector (make test's second
// pass), which slows them several times over.
const raceDetector = true
