package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/internal/safefile"
)

// Builtins are the gates built with gatehost (plugins/NAME), which a config
// may name as plugins.P.builtin: NAME instead of giving a path.
var Builtins = []string{"exec", "merge", "policy", "preconditions", "static-verify"}

// PluginDirEnv names the variable that gives the first directory searched
// for built-in gate modules.
const PluginDirEnv = "GATEHOST_PLUGIN_DIR"

// executable is os.Executable, replaced by tests.
var executable = os.Executable

// PluginDirs are the directories searched, in order, for a built-in gate's
// module NAME.wasm: $GATEHOST_PLUGIN_DIR when set, then
// PREFIX/lib/gatehost/plugins for the gatehost executable at
// PREFIX/bin/gatehost (symbolic links resolved), where make install and the
// container image put them. Nothing else is searched: a source checkout's
// build/plugins is used only when named, by GATEHOST_PLUGIN_DIR or a path.
func PluginDirs() []string {
	var dirs []string
	if d := os.Getenv(PluginDirEnv); d != "" {
		dirs = append(dirs, d)
	}
	if exe, err := executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(exe)), "lib", "gatehost", "plugins"))
	}
	return dirs
}

// ResolveBuiltin returns the path of the built-in gate name's module: the
// first regular file NAME.wasm in PluginDirs. An unknown name, a module
// found nowhere, or one that is not a regular file is an error naming the
// places looked.
func ResolveBuiltin(name string) (string, error) {
	if !slices.Contains(Builtins, name) {
		return "", fmt.Errorf("%q is not a built-in gate (%s)", name, strings.Join(Builtins, ", "))
	}
	dirs := PluginDirs()
	var looked []string
	if os.Getenv(PluginDirEnv) == "" {
		looked = append(looked, "$"+PluginDirEnv+" (unset)")
	}
	for i, d := range dirs {
		p := filepath.Join(d, name+".wasm")
		err := safefile.CheckRegular(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if i == 0 && os.Getenv(PluginDirEnv) != "" {
			p = "$" + PluginDirEnv + ": " + p
		}
		looked = append(looked, p)
	}
	return "", fmt.Errorf("module %s.wasm not found; looked in %s (make install puts it in PREFIX/lib/gatehost/plugins; or set %s, e.g. to build/plugins after make build)",
		name, strings.Join(looked, ", "), PluginDirEnv)
}
