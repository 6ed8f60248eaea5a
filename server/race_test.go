//go:build race

package server

// raceEnabled scales load tests down under the race detector.
const raceEnabled = true
