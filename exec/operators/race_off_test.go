//go:build !race

package operators

// raceDetector: see race_on_test.go.
const raceDetector = false
