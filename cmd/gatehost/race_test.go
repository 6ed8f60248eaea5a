//go:build race

package main

// raceEnabled scales load tests down under the race detector.
const raceEnabled = true
