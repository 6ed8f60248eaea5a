package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// buildVersion is the version to print: the one set at link time, else the
// module version the binary was built at (go install …@v1.2.3), else the VCS
// revision the go command stamped ("+dirty" for uncommitted changes), else
// "devel".
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified, at string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			at = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel-" + rev
	if modified == "true" {
		v += "+dirty"
	}
	if at != "" {
		v += " " + at
	}
	return v
}

// commands are the top-level commands, for help and completion.
var commands = []string{"check", "serve", "mcp", "log", "session", "approvals", "catalog", "merge-verify", "domain", "policy", "plugin", "bench", "version", "help", "completion"}

// subcommands are the second words of the commands that have them.
var subcommands = map[string][]string{
	"log":        {"verify", "export"},
	"session":    {"create", "activate", "revoke", "rebuild", "show"},
	"approvals":  {"page"},
	"catalog":    {"show", "diff"},
	"domain":     {"validate"},
	"policy":     {"schema", "validate", "test"},
	"plugin":     {"inspect", "check", "pin", "new"},
	"completion": {"bash", "zsh", "fish"},
	"help":       commands,
}

// cmdCompletion prints a completion script for a shell. The scripts
// complete commands and subcommands from the lists above and flags by
// asking the binary itself for a command's --help, so they never go stale.
func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		fmt.Fprintln(stdout, "Usage: gatehost completion bash|zsh|fish\n\nbash: source <(gatehost completion bash)\nzsh:  source <(gatehost completion zsh)\nfish: gatehost completion fish | source")
		return 0
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "gatehost completion: want one of bash, zsh, fish")
		return exitUsage
	}
	var subs strings.Builder
	for _, c := range commands {
		if s, ok := subcommands[c]; ok {
			fmt.Fprintf(&subs, "    %s) words=%q ;;\n", c, strings.Join(s, " "))
		}
	}
	cmds := strings.Join(commands, " ")
	switch args[0] {
	case "bash", "zsh":
		if args[0] == "zsh" {
			fmt.Fprintln(stdout, "autoload -U +X bashcompinit && bashcompinit")
		}
		fmt.Fprintf(stdout, bashCompletion, cmds, subs.String())
	case "fish":
		fmt.Fprintf(stdout, fishCompletion, cmds)
		for _, c := range commands {
			if s, ok := subcommands[c]; ok {
				fmt.Fprintf(stdout, "complete -c gatehost -n '__fish_seen_subcommand_from %s; and test (count (commandline -opc)) -eq 2' -a %q\n", c, strings.Join(s, " "))
			}
		}
	default:
		fmt.Fprintf(stderr, "gatehost completion: unknown shell %q: want bash, zsh or fish\n", args[0])
		return exitUsage
	}
	return 0
}

const bashCompletion = `# gatehost completion for bash (and zsh through bashcompinit).
_gatehost() {
  local cur=${COMP_WORDS[COMP_CWORD]} words=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "%s" -- "$cur")); return
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" "${COMP_WORDS[@]:1:COMP_CWORD-1}" --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)" -- "$cur")); return
  fi
  if [ "$COMP_CWORD" -eq 2 ]; then
    case ${COMP_WORDS[1]} in
%s    esac
    [ -n "$words" ] && { COMPREPLY=($(compgen -W "$words" -- "$cur")); return; }
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _gatehost gatehost
`

const fishCompletion = `# gatehost completion for fish.
complete -c gatehost -f -n '__fish_use_subcommand' -a '%s'
`
