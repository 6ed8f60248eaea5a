package main

// maxOperatorFileBytes caps merge-verify's --footprint and --waiver
// (docs/CONFIGURATION.md); the config file's cap is config.MaxFileBytes,
// serve's files' are in package server.
const maxOperatorFileBytes = 4 << 20
