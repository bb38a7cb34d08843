// Command zcgw is the one binary of the project: the demo, the server, the
// simulated cores, the batch jobs and the file tools are its subcommands.
// Each subcommand lives in its own file and registers itself in init.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// env is what every subcommand gets: where state lives and where to write.
type env struct {
	DataDir string
	Stdout  io.Writer
	Stderr  io.Writer
}

// command is one subcommand of zcgw.
type command struct {
	Summary string
	Run     func(ctx context.Context, e *env, args []string) int
	// Usage prints the command's full usage (for `zcgw help CMD` and
	// `zcgw CMD --help`); nil => what its flags print for -h.
	Usage func(w io.Writer)
}

var commands = map[string]command{}

func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("zcgw: duplicate command " + name)
	}
	commands[name] = c
}

// flagSet returns a FlagSet for a subcommand that also accepts --data, so
// the data folder can be given before or after the subcommand name.
func (e *env) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("zcgw "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.StringVar(&e.DataDir, "data", e.DataDir, "data folder for all embedded state (env ZCGW_DATA)")
	return fs
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{DataDir: os.Getenv("ZCGW_DATA"), Stdout: stdout, Stderr: stderr}
	if e.DataDir == "" {
		e.DataDir = "./var"
	}
	global := flag.NewFlagSet("zcgw", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.StringVar(&e.DataDir, "data", e.DataDir, "data folder for all embedded state (env ZCGW_DATA)")
	global.Usage = func() { usage(stderr) }
	if err := global.Parse(args); err != nil {
		return 2
	}
	rest := global.Args()
	if len(rest) == 0 {
		usage(stderr)
		return 2
	}
	if rest[0] == "help" {
		if len(rest) == 1 {
			usage(stdout)
			return 0
		}
		return help(ctx, e, rest[1])
	}
	c, ok := commands[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "zcgw: unknown command %q\n\n", rest[0])
		usage(stderr)
		return 2
	}
	if wantsHelp(rest[1:]) {
		return help(ctx, e, rest[0])
	}
	return c.Run(ctx, e, rest[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: zcgw [--data DIR] COMMAND [args]     (zcgw help COMMAND, zcgw COMMAND --help: its usage)")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].Summary)
	}
}
