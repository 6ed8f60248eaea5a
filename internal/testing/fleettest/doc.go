// Package fleettest holds the end-to-end test of a gatehost fleet: several
// `gatehost serve` processes sharing one real PostgreSQL (docs/FLEET.md),
// killed and restarted under load. It has no code of its own.
package fleettest
