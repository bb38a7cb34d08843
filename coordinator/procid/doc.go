// Package procid names the process that holds a claim, and tells whether a
// node is serving a data folder.
//
// A claim (an orchestrator work item, an outbox posting, an adapter request
// in progress) stores an owner string made by Identity.Owner:
// "<node>/<epoch>/<worker>". The node part is stable for a data folder's
// `zcgw serve` (persisted in <data>/node-id); the epoch changes with every
// start. At startup a node takes back at once every claim whose owner has
// its node id and another epoch: the process that held it is dead, because
// the node lock (below) lets one node serve a folder at a time. Claims held
// by any other owner wait for their lease.
//
// Lock is that node lock: an exclusive flock on <data>/node.lock, released
// by the kernel when the process dies, holding the node's address so that
// CLI commands on a served folder can reach the running node (Running)
// instead of starting a second consumer of its queues.
//
// This is shared infrastructure: it imports only coordinator/clock.
package procid
