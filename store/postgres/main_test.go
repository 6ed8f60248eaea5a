package postgres_test

import (
	"os"
	"testing"

	"github.com/gatehost/gatehost/internal/testing/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}
