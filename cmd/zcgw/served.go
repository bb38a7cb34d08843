package main

import (
	"fmt"

	"github.com/zcgw/zcgw/coordinator/procid"
)

// refuseIfServed answers a command that needs the cores or the MQ of the
// data folder (one consumer per core queue) and cannot go through the node
// serving it: when a node serves the folder it prints why, naming the node,
// and returns 1 and true.
func refuseIfServed(e *env, cmd, why string) (int, bool) {
	info, served, err := procid.Running(e.DataDir)
	if err != nil {
		fmt.Fprintf(e.Stderr, "zcgw %s: %v\n", cmd, err)
		return 1, true
	}
	if !served {
		return 0, false
	}
	fmt.Fprintf(e.Stderr, "zcgw %s: refused: the data folder %s is served by node %s (pid %d, addr %s), which %s; "+
		"stop that node first, or use another --data\n", cmd, e.DataDir, info.Node, info.PID, info.Addr, why)
	return 1, true
}
