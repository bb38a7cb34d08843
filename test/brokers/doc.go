// Package brokers holds the cross-process tests of a node whose banks'
// cores are separate processes (`zcgw coresim --mq URL`) reached only
// through a real broker (node.json mq block, banks[].core "external").
// They build cmd/zcgw once and run it as the node and as the cores.
package brokers
