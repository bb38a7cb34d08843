package main

import (
	"bytes"
	"context"
	"fmt"
)

// `zcgw help CMD` and `zcgw CMD --help` (main.go dispatches both here).

// wantsHelp reports whether a command's arguments ask for its help (-h,
// -help or --help anywhere before a "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// help prints a command's usage on stdout and exits 0 (2 for an unknown
// command).
func help(ctx context.Context, e *env, name string) int {
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.Stderr, "zcgw help: unknown command %q\n\n", name)
		usage(e.Stderr)
		return 2
	}
	fmt.Fprintf(e.Stdout, "zcgw %s: %s\n\n", name, c.Summary)
	if c.Usage != nil {
		c.Usage(e.Stdout)
		return 0
	}
	// A flag-only command prints its flags for -h and stops there.
	var buf bytes.Buffer
	he := *e
	he.Stdout, he.Stderr = &buf, &buf
	c.Run(ctx, &he, []string{"-h"})
	e.Stdout.Write(buf.Bytes())
	return 0
}
