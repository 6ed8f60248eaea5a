package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gatehost/gatehost/host"
)

// CheckToolReferences checks, when the catalog is known at load, that
// every tool a pipeline's config names (host.Host.ToolReferences) matches
// a tool of the catalog h decides against: a typo or a wrong namespace
// would otherwise switch its protection off without a word. The catalog
// is known at load when catalog.sources names files and the store does
// not serve a published catalog; otherwise nothing is checked.
//
// A pipeline is checked when a stage of it reads the catalog
// (host.Host.ReadsCatalog); the pipeline of the mcp: section is not: the
// MCP gateway builds its catalog from the upstreams' listings, and checks
// it after the first one. A pipeline h did not load (Config.OnlyPipeline)
// is not checked either.
//
// The error names the file and wraps the *host.UnmatchedToolError of
// each pipeline (errors.Is host.ErrUnmatchedTool).
func (l *Loaded) CheckToolReferences(h *host.Host) error {
	var errs []error
	var msgs []string
	if l.fileCatalog() {
		snap := h.Catalog().Snapshot()
		gateway := strings.ToLower(l.MCP.Pipeline)
		for _, p := range h.Pipelines() {
			if p.Name == gateway || !h.ReadsCatalog(p.Name) {
				continue
			}
			if err := host.CheckToolReferences(h.ToolReferences(p.Name), snap); err != nil {
				errs = append(errs, err)
				msgs = append(msgs, err.Error())
			}
		}
	}
	// A policy gate's windows are checked whatever the catalog.
	if err := l.checkPolicyGates(h); err != nil {
		errs = append(errs, err)
		msgs = append(msgs, err.Error())
	}
	if len(errs) == 0 {
		return nil
	}
	return &namedError{fmt.Sprintf("config %s: %s", l.File, strings.Join(msgs, "; ")), errors.Join(errs...)}
}
