package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/zcgw/zcgw/gateway/node"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// zcgw config check: validate a data folder's configuration (node.json and
// jobs.json) without starting, opening or writing anything.
func init() {
	register("config", command{
		Summary: "check a data folder's configuration (node.json, jobs.json) without starting anything",
		Run:     runConfig,
		Usage:   configUsage,
	})
}

func configUsage(w io.Writer) {
	fmt.Fprint(w, `usage: zcgw config check [--data DIR]

Reads DIR/node.json and, when present, DIR/jobs.json, exactly as zcgw serve
would, and starts nothing. Both are decoded strictly: an unknown or repeated
key, or a value of the wrong type, is refused with the file, line:column and
the field path (for example banks[1].accounts[0].opening_balance).
Exit 0 with a one-line summary when both are valid, 1 with the error.
A missing node.json is valid: zcgw serve writes the default one on first start.
`)
}

func runConfig(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] != "check" {
		configUsage(e.Stderr)
		return 2
	}
	fs := e.flagSet("config check")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.Stderr, "zcgw config check: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	summary, err := checkConfig(e.DataDir)
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw config check: %v\n", err)
		return 1
	}
	fmt.Fprintf(e.Stdout, "%s: configuration OK: %s\n", e.DataDir, summary)
	return 0
}

// checkConfig loads both files as a node would and summarises them.
func checkConfig(dir string) (string, error) {
	if st, err := os.Stat(dir); err != nil {
		return "", err
	} else if !st.IsDir() {
		return "", fmt.Errorf("%s is not a folder", dir)
	}
	var parts []string
	c, found, err := node.LoadConfig(dir)
	switch {
	case err != nil:
		return "", err
	case !found:
		parts = append(parts, node.ConfigFile+" absent (zcgw serve writes the default: 2 banks, 001 and 002)")
	default:
		accounts, ids := 0, make([]string, 0, len(c.Banks))
		for _, b := range c.Banks {
			accounts += len(b.Accounts)
			ids = append(ids, b.BankID)
		}
		kafka := "kafka off"
		if c.Kafka != nil && len(c.Kafka.Brokers) > 0 {
			kafka = "kafka " + strings.Join(c.Kafka.Brokers, ",")
		}
		addr := c.Addr
		if addr == "" {
			addr = "127.0.0.1:8080 (default)"
		}
		parts = append(parts, fmt.Sprintf("%s %d bank(s) (%s), %d account(s), %d api key(s), addr %s, %s, %s",
			node.ConfigFile, len(c.Banks), strings.Join(ids, ", "), accounts, len(c.APIKeys), addr, kafka, c.StoreSummary(dir)))
	}
	jobsPath := filepath.Join(dir, scheduler.ConfigFileName)
	if _, err := os.Stat(jobsPath); errors.Is(err, fs.ErrNotExist) {
		parts = append(parts, scheduler.ConfigFileName+" absent (default schedules)")
	} else {
		jc, err := scheduler.LoadConfig(jobsPath)
		if err != nil {
			return "", err
		}
		enabled := 0
		for _, j := range jc.Jobs {
			if j.Enabled {
				enabled++
			}
		}
		parts = append(parts, fmt.Sprintf("%s %d job(s), %d enabled", scheduler.ConfigFileName, len(jc.Jobs), enabled))
	}
	return strings.Join(parts, "; "), nil
}
