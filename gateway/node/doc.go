// Package node assembles one zcgw node on the embedded defaults under a
// data folder: the coordinator database and its orchestrator workers, one
// adapter per configured bank in front of its simulated legacy core
// (adapter/coresim) on the MQ transport node.json's mq block chooses (mq.go:
// the embedded file by default, RabbitMQ or AMQP 1.0; a bank whose core is
// "external" gets no simulated core, only its queues), the outbox drainers, and
// the gateway's HTTP server. The orchestrator reaches the banks through
// the signed HTTP client (coordinator/bankclient) over the node's own
// listener, so every command crosses the real wire and the real signature
// check. It is used by `zcgw serve`, by the tests in test/, by
// `zcgw demo`, and by `zcgw jobs` (JobCatalog lists the job bodies a node
// registers; a run on an unserved folder starts the node without workers).
//
// Configuration lives in DATA/node.json, written with fresh random secrets
// on first start and decoded strictly through coordinator/strictjson (an
// unknown key or a wrong type is a ConfigError naming the field path and
// line:column; LoadConfig checks without writing, for `zcgw config
// check`); the ZC egress signing key in
// DATA/zc-ed25519.key (0600). The node gives the gateway its /readyz
// checks (ready.go); OpenModes serves `zcgw mode` on an unserved folder.
//
// Start is a list of parts (lockFolder, openStores, listen,
// openCoordinator, openBanks, openJobs, openFiles, startLoops,
// startGateway), each opening what it owns and returning the one closer
// that undoes it; Close runs the closers in reverse, and a Start that fails
// runs those of the parts already done. The node assembles; it runs no
// business loop itself: each loop is the Run of the package that owns it
// (orchestrator, outbox, coresim, adapter request recovery, the nonce
// sweep in coordinator/signing, the simulated core's overnight pickup in
// jobs/overnight/corepickup, the scheduler, the file-drop watcher, the
// Kafka publisher), started by startLoops (docs/ARCHITECTURE.md, "Loops").
//
// It may import gateway, coordinator, adapter and outbox; nothing imports
// it but cmd and test.
package node
