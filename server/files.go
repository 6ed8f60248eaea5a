package server

import (
	"github.com/gatehost/gatehost/identity"
	"github.com/gatehost/gatehost/internal/frontend"
)

// ErrUsage marks errors in how the server was called: options that
// contradict each other or are out of range, a listen address that needs
// auth. The CLI exits 2 on them. It is every front end's
// (frontend.ErrUsage).
var ErrUsage = frontend.ErrUsage

// Caps on the files the server reads besides the config (docs/CONFIGURATION.md
// and docs/HTTP-API.md).
const (
	// MaxTokenFileBytes caps a token file (Options.TokenFile,
	// Options.ApproverTokenFile).
	MaxTokenFileBytes = identity.MaxTokenFileBytes
	// MaxTLSFileBytes caps Options.TLSCert and Options.TLSKey (PEM).
	MaxTLSFileBytes = frontend.MaxTLSFileBytes
)
