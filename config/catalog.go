package config

import (
	"fmt"

	"github.com/gatehost/gatehost/host/catalog"
)

// catalogLoader is loadCatalog; the config fuzz test replaces it so that no
// fuzzed path is ever opened.
var catalogLoader = loadCatalog

func loadCatalog(sources []sourceConfig, rel func(string) string) (*catalog.Store, error) {
	var tools []catalog.Tool
	for i, s := range sources {
		if s.Path == "" {
			return nil, fmt.Errorf("catalog.sources[%d].path: required", i)
		}
		ts, err := catalog.Load(rel(s.Path), catalog.ImportOptions{Format: s.Format, Server: s.Server})
		if err != nil {
			key := fmt.Sprintf("catalog.sources[%d]", i)
			if fileError(err) {
				key += ".path"
			}
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if err := catalog.CheckSchemas(ts); err != nil {
			return nil, fmt.Errorf("catalog.sources[%d] (%s): %w", i, rel(s.Path), err)
		}
		tools = append(tools, ts...)
	}
	return catalog.NewStore(tools...)
}
