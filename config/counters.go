package config

import (
	"fmt"
	"time"

	"github.com/gatehost/gatehost/abi"
)

// countersConfig is the counters: section: the windows the host counts
// each session's and principal's accepted tool calls over
// (docs/CONFIGURATION.md "Counters").
type countersConfig struct {
	// Windows are durations as Go writes them, or days ("1m", "1h",
	// "24h", "7d"); each abi.ValidWindow.
	Windows []string `mapstructure:"windows"`
}

// durations parses the windows; host.New checks their number and
// repetitions.
func (c countersConfig) durations() ([]time.Duration, error) {
	var out []time.Duration
	for i, w := range c.Windows {
		d, err := abi.ParseWindow(w)
		if err != nil {
			return nil, fmt.Errorf("counters.windows[%d]: %w", i, err)
		}
		out = append(out, d)
	}
	return out, nil
}
