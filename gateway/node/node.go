package node

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/jobs/batchwindow"
	"github.com/zcgw/zcgw/jobs/dns"
	"github.com/zcgw/zcgw/jobs/overnight"
	"github.com/zcgw/zcgw/jobs/overnight/corepickup"
	"github.com/zcgw/zcgw/outbox"
	"github.com/zcgw/zcgw/outbox/events"
	"github.com/zcgw/zcgw/outbox/events/kafkapub"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zcgw/zcgw/adapter"
	"github.com/zcgw/zcgw/adapter/corelink"
	"github.com/zcgw/zcgw/adapter/coresim"
	"github.com/zcgw/zcgw/adapter/mq"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/bankclient"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/fx"
	"github.com/zcgw/zcgw/coordinator/lane"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/coordinator/sysmode"
	"github.com/zcgw/zcgw/coordinator/zclog"
	"github.com/zcgw/zcgw/formats/zengin"
	"github.com/zcgw/zcgw/gateway"
	"github.com/zcgw/zcgw/gateway/filedrop"
	"github.com/zcgw/zcgw/jobs/ledger"
	"github.com/zcgw/zcgw/jobs/scheduler"
)

// SigningKeyFile holds the ZC egress Ed25519 seed (hex) in the data folder.
const SigningKeyFile = "zc-ed25519.key"

// Options tune a Node beyond node.json.
type Options struct {
	DataDir string
	// Config overrides DATA/node.json when set.
	Config *Config
	// Addr overrides Config.Addr (tests use "127.0.0.1:0").
	Addr   string
	Clock  clock.Clock
	Logger *slog.Logger
	// Orchestrator adjusts the orchestrator configuration of every worker.
	Orchestrator func(*orchestrator.Config)
	// Idle is how long a worker or drainer sleeps when it found no work
	// (default 5ms).
	Idle time.Duration
	// NoWorkers starts no orchestrator workers and no outbox drainers
	// (tests that drive them by hand).
	NoWorkers bool
	// WatchFiles starts the file-drop watcher over every bank's folders
	// (DATA/banks/<id>/inbound …), polling every WatchEvery (default 1s).
	// `zcgw serve` turns it on; tests and the demo drive Node.Files by hand.
	WatchFiles bool
	WatchEvery time.Duration
	// Schedule runs the batch jobs on their cron schedules (DATA/jobs.json,
	// CRON_TZ=Asia/Tokyo), after catching up missed daily runs. `zcgw
	// serve` turns it on; tests and the demo trigger jobs themselves.
	Schedule bool
}

// linkTimeout is how long the core link waits for a core's reply before
// the posting is IN_DOUBT.
const linkTimeout = 5 * time.Second

// Bank is one bank of the node: its adapter in front of its core (Core is
// the simulated core the node runs, nil for an external core).
type Bank struct {
	ID      string
	Adapter *adapter.Adapter
	Core    *coresim.Core
	Link    *corelink.Link
	Config  BankConfig
	// Exchange sends the overnight posting files of a batch-window bank
	// (nil for a real-time bank); Overnight names its folders.
	Exchange  *overnight.Exchange
	Overnight overnightFolders
}

// adaptersByBank maps each bank id to its adapter (the gateway's drift resolution).
func (n *Node) adaptersByBank() map[string]*adapter.Adapter {
	out := make(map[string]*adapter.Adapter, len(n.Banks))
	for id, b := range n.Banks {
		out[id] = b.Adapter
	}
	return out
}

// Node is a running zcgw node.
type Node struct {
	Config  Config
	DataDir string
	// Stores is where each of the node's databases lives (node.json's
	// store block); every database the node opens is located through it.
	Stores       store.Locator
	URL          string // http://host:port of the listener
	DB           *store.DB
	Orchestrator *orchestrator.Orchestrator
	Workers      []*orchestrator.Orchestrator
	// FX is the FX market and conduit transfers (coordinator/fx): its
	// decided legs go to Orchestrator's queue, its sweep is a step of the
	// timeout-sweep job.
	FX      *fx.FX
	Gateway *gateway.Server
	Banks   map[string]*Bank
	Keys    *signing.Registry
	Client  *bankclient.Client
	// Transport is the queue manager node.json's mq block names (mq.go).
	Transport mq.Transport
	// NonceDB is the ingress nonce store (store.NoncesDB); zcgw bench
	// reads its commit counter.
	NonceDB *store.DB
	// Jobs is the batch-job runner behind POST /internal/cron/{job}, with
	// every job body registered (registerAllJobs; JobCatalog lists them);
	// JobLedger is its run ledger (in the coordinator's database).
	Jobs      *scheduler.Runner
	JobLedger *ledger.Ledger
	// FinalityLog is the one log every coordinator writer appends to.
	FinalityLog *finality.Log
	// EventSigner signs the §12.2 signature block of every event with the
	// ZC egress key (SigningKeyFile); its public half is in Keys.
	EventSigner *events.Signer
	// DNS runs the deferred net settlement cycles; Windows the BULK and
	// DEFERRED windows with LSM (their job bodies are in Jobs).
	DNS     *dns.Service
	Windows *batchwindow.Window
	// Files takes Zengin files dropped in every bank's inbound folder and
	// writes their result files (gateway/filedrop).
	Files *filedrop.Processor
	// ID names this start of the node: the data folder's persisted node id
	// and a fresh epoch. Claims made by the node's loops store ID.Owner(…),
	// so the next start takes back at once what this one held when it died
	// (coordinator/procid).
	ID procid.Identity

	lock     *procid.Lock
	lockInfo procid.Info
	ln       net.Listener
	signer   signing.Ed25519Signer
	nonces   *signing.DBNonces
	kafka    atomic.Pointer[kafkapub.Publisher] // nil until started (readyChecks)
	log      *slog.Logger
	clk      clock.Clock
	closers  closers // one per part of Start, run in reverse by Close
	once     sync.Once
}

type inquiry struct{ l *corelink.Link }

func (i inquiry) Balance(ctx context.Context, acct string) (adapter.CoreBalance, error) {
	return adapter.LinkBalance(ctx, i.l, acct)
}

func (i inquiry) NameCheck(ctx context.Context, acct, name string) (adapter.NameResult, error) {
	r, err := i.l.NameCheck(ctx, acct, name)
	switch {
	case err != nil:
		return "", err
	case r == "M":
		return adapter.NameMatch, nil
	case r == "N":
		return adapter.NameNoAccount, nil
	}
	return adapter.NameMismatch, nil
}

// Start opens (creating on first use) everything under opts.DataDir,
// listens, and starts the workers, the outbox drainers and the cores. Stop
// it with Close.
//
// Start runs its parts in order; each part opens what it owns and returns
// the one closer that undoes it, and Close runs those closers in reverse:
// the HTTP server drains its in-flight requests first, then the loops
// stop, the cores stop serving before their databases close, and the
// folder lock goes last. A part that fails has already undone its own
// half-done work; the closers of the parts before it run as Start returns.
func Start(ctx context.Context, opts Options) (n *Node, err error) {
	cfg, opts, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	n = &Node{Config: cfg, DataDir: opts.DataDir, Stores: cfg.Locator(opts.DataDir), log: zclog.OrDiscard(opts.Logger).With("component", "node"), clk: opts.Clock, Banks: map[string]*Bank{}}
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	for _, part := range []func(context.Context, Options) (func() error, error){
		n.lockFolder,      // DATA/node.lock: one node per folder
		n.openStores,      // the coordinator's database, the ZC signing key, the ingress nonces
		n.listen,          // the listener (the bank client calls the node's own URL)
		n.openCoordinator, // FinalityLog, event signing, orchestrator workers, BOJ accounts
		n.openBanks,       // per bank: core (serving), core link, adapter, overnight exchange
		n.moveNonces,      // ingress nonces kept before the adapters consumed them into each adapter's database
		n.openJobs,        // job registry, ledger, runner
		n.openFiles,       // the file-drop processor
		n.startLoops,      // workers, outboxes, recovery, sweeps, scheduler, watchers
		n.startGateway,    // the HTTP server, last to start and first to stop
	} {
		closer, err := part(ctx, opts)
		if closer != nil {
			n.closers = append(n.closers, closer)
		}
		if err != nil {
			return n, err
		}
	}
	n.log.Info("node.started", "url", n.URL, "banks", len(n.Banks), "workers", len(n.Workers), "data", opts.DataDir, "store", n.Stores.Describe(store.CoordinatorDB))
	return n, nil
}

// resolve fills opts' defaults and reads (or writes, on first use) the
// configuration.
func resolve(opts Options) (Config, Options, error) {
	if opts.DataDir == "" {
		return Config{}, opts, errors.New("node: Options.DataDir is required")
	}
	var cfg Config
	if opts.Config != nil {
		cfg = *opts.Config
		if err := cfg.Validate(); err != nil {
			return cfg, opts, err
		}
	} else {
		if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
			return cfg, opts, err
		}
		var err error
		if cfg, err = LoadOrInitConfig(opts.DataDir); err != nil {
			return cfg, opts, err
		}
	}
	if opts.Addr != "" {
		cfg.Addr = opts.Addr
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Idle <= 0 {
		opts.Idle = 5 * time.Millisecond
	}
	opts.Logger = zclog.OrDiscard(opts.Logger)
	return cfg, opts, os.MkdirAll(opts.DataDir, 0o755)
}

func (n *Node) path(name string) string { return filepath.Join(n.DataDir, name) }

// lockFolder takes the data folder's lock: one node serves a folder at a
// time, the lock dies with the process, and a CLI command finds the
// running node's address in it (listen adds it).
func (n *Node) lockFolder(_ context.Context, opts Options) (func() error, error) {
	var err error
	if n.ID, err = procid.LoadNode(opts.DataDir, opts.Clock); err != nil {
		return nil, err
	}
	n.lockInfo = procid.Info{PID: os.Getpid(), Node: n.ID.Node, Epoch: n.ID.Epoch, Started: clock.Stamp(opts.Clock.Now())}
	if n.lock, err = procid.Acquire(opts.DataDir, n.lockInfo); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	return n.lock.Close, nil
}

// openStores opens the coordinator database, the ZC egress key (created
// and registered on first use) and the ingress nonce database.
func (n *Node) openStores(ctx context.Context, opts Options) (closer func() error, err error) {
	var c closers
	defer c.onError(&err)
	if n.DB, err = store.OpenCoordinator(ctx, n.Stores.Location(store.CoordinatorDB)); err != nil {
		return nil, err
	}
	c.add(n.DB.Close)
	n.Keys = signing.NewRegistry(n.DB, opts.Clock)
	if n.signer, err = loadSigningKey(ctx, n.path(SigningKeyFile), n.Keys, opts.Clock); err != nil {
		return nil, err
	}
	if n.NonceDB, err = store.Open(ctx, n.Stores.Location(store.NoncesDB), signing.NonceSchema); err != nil {
		return nil, err
	}
	c.add(n.NonceDB.Close)
	n.nonces = signing.NewDBNonces(n.NonceDB, opts.Clock)
	return c.close, nil
}

// moveNonces moves the nonces ingress-nonces.db holds into every
// adapter's database, where the adapters consume the nonces of the
// requests they serve in the command's own transaction
// (signing.NonceClaim): a request consumed before an upgrade, or one the
// gateway consumed for a bank no adapter served, stays consumed.
func (n *Node) moveNonces(ctx context.Context, _ Options) (func() error, error) {
	dbs := make([]*store.DB, 0, len(n.Banks))
	for _, b := range n.Banks {
		dbs = append(dbs, b.Adapter.DB())
	}
	moved, err := signing.MoveNonces(ctx, n.NonceDB, dbs)
	if moved > 0 {
		n.log.Info("node.nonces_moved", "nonces", moved, "adapters", len(dbs))
	}
	return nil, err
}

// listen opens the listener (Config.Addr; port 0 picks one) and writes its
// address into the folder lock. startGateway serves it.
func (n *Node) listen(_ context.Context, opts Options) (func() error, error) {
	ln, err := net.Listen("tcp", n.Config.Addr)
	if err != nil {
		return nil, err
	}
	n.URL = "http://" + ln.Addr().String()
	n.lockInfo.Addr = ln.Addr().String()
	if err := n.lock.Update(n.lockInfo); err != nil {
		ln.Close()
		return nil, err
	}
	n.ln = ln
	return func() error {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	}, nil
}

// openCoordinator builds what writes the coordinator database: the signed
// client the orchestrator calls banks through (over the node's own URL),
// the one FinalityLog with the event outbox hooked on it, the orchestrator
// workers, and each bank's BOJ account.
func (n *Node) openCoordinator(ctx context.Context, opts Options) (func() error, error) {
	var err error
	if n.Client, err = bankclient.New(bankclient.Config{BaseURL: n.URL, Signer: n.signer, Logger: opts.Logger}); err != nil {
		return nil, err
	}
	// One FinalityLog for every writer of the coordinator database, so a
	// hook installed on it (the event outbox) sees every append.
	n.FinalityLog = finality.New(opts.Clock)
	n.EventSigner = &events.Signer{KeyID: n.signer.KeyID, PrivateKey: n.signer.PrivateKey}
	events.Install(n.FinalityLog, events.Producer{}, n.EventSigner)
	for i := 0; i < n.Config.Workers; i++ {
		// One Run loop works many transfers at once, so their steps share
		// group commits; several loops split the in-flight bound.
		oc := orchestrator.Config{DB: n.DB, Banks: n.Client, Clock: opts.Clock, Logger: opts.Logger, WorkerID: n.ID.Owner(fmt.Sprintf("worker-%d", i+1)),
			FinalityLog: n.FinalityLog, Concurrency: max(1, orchestrator.DefaultRunConcurrency/n.Config.Workers), BatchSize: 64}
		if opts.Orchestrator != nil {
			opts.Orchestrator(&oc)
		}
		o, err := orchestrator.New(oc)
		if err != nil {
			return nil, err
		}
		n.Workers = append(n.Workers, o)
	}
	n.Orchestrator = n.Workers[0]
	if n.FX, err = fx.New(fx.Config{DB: n.DB, Lanes: lane.New(n.DB, n.FinalityLog, sysmode.Gate{}, opts.Clock, opts.Logger),
		Banks: n.Client, Legs: n.Orchestrator, Clock: opts.Clock, Logger: opts.Logger}); err != nil {
		return nil, err
	}
	for _, bc := range n.Config.Banks {
		if _, err := n.Orchestrator.OpenPosition(ctx, bc.BankID, orchestrator.VenueBOJ, "JPY", bc.bojOpening()); err != nil {
			return nil, fmt.Errorf("bank %s: open BOJ account: %w", bc.BankID, err)
		}
	}
	return nil, nil
}

// openBanks opens the embedded MQ and every configured bank (openBank).
// Its closer stops the cores serving, then closes each bank's adapter,
// link and core.
func (n *Node) openBanks(ctx context.Context, opts Options) (closer func() error, err error) {
	// The queue manager's connection leases and heartbeats measure real
	// elapsed time (its tickers are real), so it runs on the system clock
	// even when the node's business clock is a manual one: a business-clock
	// jump must not make live connections look dead to each other.
	if n.Transport, err = OpenTransport(n.Config.MQ, n.Stores, "zcgw serve "+n.ID.String(), n.log); err != nil {
		return nil, err
	}
	cores := newLoops(ctx)
	var c closers
	closeAll := func() error {
		cores.stop() // the cores stop serving before their databases close
		return c.close()
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	for _, bc := range n.Config.Banks {
		b, err := n.openBank(ctx, bc, opts, cores, &c)
		if err != nil {
			return nil, fmt.Errorf("bank %s: %w", bc.BankID, err)
		}
		n.Banks[bc.BankID] = b
	}
	return closeAll, nil
}

// openBank opens one bank: its simulated core (claimed as the only
// consumer of its request queue and serving under cores), the core link,
// the adapter with its accounts and aliases, its participant row, and for
// a batch-window bank the overnight exchange. What it opens is added to c.
func (n *Node) openBank(ctx context.Context, bc BankConfig, opts Options, cores *loops, c *closers) (*Bank, error) {
	b := &Bank{ID: bc.BankID, Config: bc}
	if err := n.startCore(ctx, b, bc, opts, cores, c); err != nil {
		return nil, err
	}
	var err error
	if b.Link, err = corelink.Open(ctx, n.linkConfig(b, opts)); err != nil {
		return nil, err
	}
	c.add(b.Link.Close)
	if b.Adapter, err = adapter.Open(ctx, adapter.Config{BankID: bc.BankID, DBPath: n.Stores.Location(store.AdapterDB(bc.BankID)),
		Core: b.Link, Inquiry: inquiry{b.Link}, Cases: adapter.CoordinatorCases{DB: n.DB, Cases: cases.New(opts.Clock, opts.Logger, 0)}, Postings: postingReports{n},
		RealTime: bc.RealTime, Currencies: bc.Currencies, CustodyAccount: bc.CustodyAccount, InquiryTimeout: 2 * time.Second, Identity: n.ID, Clock: opts.Clock, Logger: opts.Logger,
		Resume: newZCClient(n), Transfers: newZCClient(n), Accounts: b.Link}); err != nil {
		return nil, err
	}
	c.add(b.Adapter.Close)
	if _, err := b.Adapter.InitializeBank(ctx, bankapi.InitializeBankRequest{RequestIDValue: "init-" + bc.BankID}); err != nil {
		return nil, err
	}
	for _, a := range bc.Accounts {
		if b.Core == nil {
			// An external core opens its accounts itself; the shadow
			// below takes their balances from it by inquiry.
		} else if bal, err := b.Core.Balance(ctx, a.CoreAccount); err != nil {
			return nil, err
		} else if !bal.Found {
			cur := a.Currency
			if cur == "" {
				cur = "JPY" // Account.Currency "" is a yen account
			}
			if err := b.Core.OpenAccountIn(ctx, a.CoreAccount, a.Name, cur, a.Balance); err != nil {
				return nil, fmt.Errorf("account %s: %w", a.Hash, err)
			}
		}
		if _, err := b.Adapter.Shadow(ctx, a.Hash); err != nil {
			if err := b.Adapter.OpenAccountFromCore(ctx, adapter.Account{Hash: a.Hash, CoreAccount: a.CoreAccount, HolderName: a.Name, Currency: a.Currency}); err != nil {
				return nil, fmt.Errorf("account %s: %w", a.Hash, err)
			}
		}
		if a.CustomerID != "" {
			if err := b.Adapter.LinkCustomer(ctx, a.CustomerID, a.CoreAccount); err != nil {
				return nil, fmt.Errorf("account %s: customer %s: %w", a.Hash, a.CustomerID, err)
			}
		}
		for _, ref := range a.PSPRRefs {
			// Registered on the first start; STATE_GUARD on a restart.
			if err := b.Adapter.RegisterAlias(ctx, ref, a.Hash); err != nil && !domainerr.Has(err, "STATE_GUARD") {
				return nil, fmt.Errorf("account %s: pspr_ref %s: %w", a.Hash, ref, err)
			}
		}
	}
	reg := n.Orchestrator.Participants()
	if _, err := reg.Get(ctx, bc.BankID); domainerr.Has(err, "PARTICIPANT_NOT_FOUND") {
		if _, err := reg.Create(ctx, participants.Participant{BankID: bc.BankID, BankName: bc.Name, HLimit: bc.HLimit, IsActive: true}); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if err := n.openFX(ctx, bc); err != nil {
		return nil, fmt.Errorf("bank %s: %w", bc.BankID, err)
	}
	if !bc.RealTime {
		// A batch-window bank takes its BULK and DEFERRED postings as an
		// overnight file (jobs/overnight) instead of one message each.
		b.Overnight = overnightFolders{Inbound: n.path("overnight/" + bc.BankID + "/inbound"), Results: n.path("overnight/" + bc.BankID + "/results")}
		if b.Exchange, err = overnight.Open(ctx, overnight.Config{Bank: bc.BankID, DB: b.Adapter.DB(), Outbox: b.Adapter.Outbox(),
			Inbound: b.Overnight.Inbound, Results: b.Overnight.Results, Clock: opts.Clock, Logger: opts.Logger}); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// overnightFolders are where a batch-window bank's core finds its posting
// files and leaves its result files.
type overnightFolders struct{ Inbound, Results string }

// openJobs registers every job body (registerAllJobs) and opens the job
// ledger and the runner behind POST /internal/cron/{job}.
func (n *Node) openJobs(ctx context.Context, opts Options) (func() error, error) {
	jobsCfg, err := scheduler.LoadConfig(n.path(scheduler.ConfigFileName))
	if err != nil {
		return nil, err
	}
	reg := scheduler.NewRegistry()
	if err := n.registerAllJobs(ctx, reg, opts.Clock, opts.Logger); err != nil {
		return nil, err
	}
	if n.JobLedger, err = ledger.Open(ctx, n.Stores.Location(store.CoordinatorDB), opts.Clock); err != nil {
		return nil, err
	}
	if n.Jobs, err = scheduler.NewRunner(scheduler.Options{Ledger: n.JobLedger, Registry: reg, Config: jobsCfg, Clock: opts.Clock, Logger: opts.Logger}); err != nil {
		n.JobLedger.Close()
		return nil, err
	}
	return n.JobLedger.Close, nil
}

// openFiles builds the file-drop processor over every bank's folders
// (filedrop; the watcher in startLoops drives it when asked).
func (n *Node) openFiles(_ context.Context, opts Options) (func() error, error) {
	fileBanks := make([]filedrop.Bank, 0, len(n.Config.Banks))
	for _, bc := range n.Config.Banks {
		names, _ := zengin.ParseNameChars(bc.ZenginNames) // checked by Config.Validate
		fileBanks = append(fileBanks, filedrop.Bank{ID: bc.BankID, Names: names})
	}
	var err error
	if n.Files, err = filedrop.New(filedrop.Config{DB: n.DB, Coordinator: n.Orchestrator, Participants: n.Orchestrator.Participants(),
		Root: n.Config.FilesDir(opts.DataDir), Banks: fileBanks, Accounts: n.Config.FileAccounts(), Clock: opts.Clock, Logger: opts.Logger}); err != nil {
		return nil, err
	}
	return nil, nil
}

// startGateway builds the HTTP server over the node's parts and serves
// the listener. Its closer drains the
// in-flight requests and returns the server's error.
func (n *Node) startGateway(ctx context.Context, opts Options) (func() error, error) {
	cfg := n.Config
	var hmacSecret *signing.Rotating
	if cfg.HMAC != nil {
		hmacSecret = cfg.HMAC.rotating()
		hmacSecret.Logger = opts.Logger
	}
	handlers := map[string]http.Handler{}
	for id, b := range n.Banks {
		handlers[id] = b.Adapter.Handler()
	}
	var err error
	n.Gateway, err = gateway.New(gateway.Config{
		Coordinator: n.Orchestrator, DB: n.DB, Participants: n.Orchestrator.Participants(), Banks: handlers,
		Ingress: &signing.Verifier{Registry: n.Keys, Nonces: n.nonces, Clock: opts.Clock, OwnerType: signing.OwnerZC, HMAC: hmacSecret, Params: params.Reader{DB: n.DB}},
		Queries: &signing.Verifier{Registry: n.Keys, Nonces: signing.NewDBNonces(n.DB, opts.Clock), Clock: opts.Clock, Params: params.Reader{DB: n.DB}},
		APIKeys: cfg.apiKeys(), CronSecret: cfg.CronSecret, AllowUnauthenticatedUI: cfg.AllowUnauthenticatedUI,
		Jobs:  n.Jobs.Handler(),
		DNS:   n.DNS.Handler(),
		Ready: n.readyChecks(n.NonceDB, n.JobLedger.DB()), Collectors: n.collectors(n.JobLedger), CorePostings: corePostings{n}, FinalityLog: n.FinalityLog,
		Adapters: n.adaptersByBank(), FX: n.FX,
		Clock: opts.Clock, Logger: opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	srvCtx, stop := context.WithCancel(context.Background())
	var srvErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		srvErr = n.Gateway.Serve(srvCtx, n.ln)
	}()
	return func() error {
		stop()
		<-done
		return srvErr
	}, nil
}

// startLoops starts the node's background loops, each the Run of the
// package that owns it: the orchestrator workers, each bank's outbox and
// request recovery, the ingress nonce sweep, a batch-window core's
// overnight pickup, and when configured the Kafka publisher, the job
// scheduler and the file-drop watcher. Its closer stops them all and waits.
func (n *Node) startLoops(ctx context.Context, opts Options) (closer func() error, err error) {
	l := newLoops(ctx)
	var pub *kafkapub.Publisher
	closer = func() error {
		l.stop()
		if pub != nil {
			return pub.Close()
		}
		return nil
	}
	if !opts.NoWorkers {
		for _, o := range n.Workers {
			l.run(func(ctx context.Context) { o.Run(ctx, opts.Idle*4) })
		}
		for _, b := range n.Banks {
			l.run(func(ctx context.Context) {
				// The outbox's own loop: it takes back at once what an earlier
				// start of this node held, and releases its claims on Close.
				err := b.Adapter.Outbox().Run(ctx, outbox.RunConfig{Identity: n.ID, Worker: "outbox"}) // woken by the adapter's commits
				if err != nil {
					n.log.Error("node.outbox_stopped", "bank_id", b.ID, "error", err)
				}
			})
		}
		for _, b := range n.Banks { // in-progress adapter requests of dead owners (issue 12)
			l.run(func(ctx context.Context) { _ = b.Adapter.RunRequestRecovery(ctx, 0) })
		}
		l.run(func(ctx context.Context) {
			n.logStop(ctx, "nonce_sweep", n.nonces.RunSweep(ctx, signing.NonceSweepEvery, opts.Logger))
		})
		for _, b := range n.Banks {
			if b.Exchange != nil && b.Core != nil { // an external core picks up its files itself
				l.run(func(ctx context.Context) {
					n.logStop(ctx, "core_pickup", corepickup.Run(ctx, corepickup.RunConfig{Core: b.Core, Clock: opts.Clock,
						Inbound: b.Overnight.Inbound, Results: b.Overnight.Results, Logger: opts.Logger}))
				})
			}
		}
	}
	if k := n.Config.Kafka; k != nil && len(k.Brokers) > 0 {
		if pub, err = startPublisher(ctx, events.New(n.DB, opts.Clock), kafkapub.Config{Brokers: k.Brokers,
			Topics: kafkapub.Topics{Default: k.DefaultTopic, Families: k.Topics}, CreateTopics: (*kafkapub.TopicLayout)(k.CreateTopics),
			Wake: events.WakeOf(n.FinalityLog), Owner: n.ID.Owner("events"), Clock: opts.Clock, Logger: opts.Logger}, n.log); err != nil {
			l.stop()
			return nil, err
		}
		n.kafka.Store(pub)
		l.run(func(ctx context.Context) { n.logStop(ctx, "publisher", pub.Run(ctx)) })
	}
	if opts.Schedule {
		l.run(func(ctx context.Context) { n.logStop(ctx, "scheduler", n.Jobs.Serve(ctx)) })
	}
	if opts.WatchFiles {
		w := filedrop.NewWatcher(n.Files, opts.WatchEvery)
		l.run(func(ctx context.Context) { n.logStop(ctx, "filedrop", w.Run(ctx)) })
	}
	return closer, nil
}

// logStop logs a loop that stopped with an error of its own (not the
// node's Close).
func (n *Node) logStop(ctx context.Context, loop string, err error) {
	if err != nil && ctx.Err() == nil {
		n.log.Error("node."+loop+"_stopped", "error", err)
	}
}

// loops are goroutines sharing one cancel: stop cancels them and waits.
type loops struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newLoops keeps ctx's values but not its cancellation: loops run until
// stop.
func newLoops(ctx context.Context) *loops {
	l := &loops{}
	l.ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return l
}

func (l *loops) run(f func(ctx context.Context)) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		f(l.ctx)
	}()
}

func (l *loops) stop() error {
	l.cancel()
	l.wg.Wait()
	return nil
}

// closers undo, in reverse order, what a part opened.
type closers []func() error

func (c *closers) add(f func() error) { *c = append(*c, f) }

func (c *closers) close() error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		errs = append(errs, (*c)[i]())
	}
	*c = nil
	return errors.Join(errs...)
}

// onError closes what was added when *err is set (defer it).
func (c *closers) onError(err *error) {
	if *err != nil {
		c.close()
	}
}

// loadSigningKey reads (or creates) the ZC egress key and makes sure its
// public half is registered in KeyRegistry with owner_type ZC.
func loadSigningKey(ctx context.Context, path string, reg *signing.Registry, clk clock.Clock) (signing.Ed25519Signer, error) {
	var priv ed25519.PrivateKey
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		_, priv, err = ed25519.GenerateKey(nil)
		if err != nil {
			return signing.Ed25519Signer{}, err
		}
		if err := os.WriteFile(path, []byte(hex.EncodeToString(priv.Seed())+"\n"), 0o600); err != nil {
			return signing.Ed25519Signer{}, err
		}
	case err != nil:
		return signing.Ed25519Signer{}, err
	default:
		seed, err := hex.DecodeString(string(trimNL(raw)))
		if err != nil || len(seed) != ed25519.SeedSize {
			return signing.Ed25519Signer{}, fmt.Errorf("%s: not a hex Ed25519 seed", path)
		}
		priv = ed25519.NewKeyFromSeed(seed)
	}
	pub := priv.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	keyID := "KEY-ZC-" + hex.EncodeToString(sum[:6])
	if _, err := reg.Get(ctx, keyID); domainerr.Has(err, "KEY_NOT_FOUND") {
		if err := reg.Register(ctx, signing.Key{KeyID: keyID, OwnerType: signing.OwnerZC, OwnerRef: "ZC", PublicKey: pub,
			ValidFrom: clk.Now().Add(-signing.DefaultSkew)}); err != nil {
			return signing.Ed25519Signer{}, err
		}
	} else if err != nil {
		return signing.Ed25519Signer{}, err
	}
	return signing.Ed25519Signer{KeyID: keyID, PrivateKey: priv, Clock: clk}, nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// Close shuts the node down, undoing Start's parts in reverse: the HTTP
// server drains its in-flight requests, the loops stop, the job ledger
// closes, the cores stop serving and the banks' databases close, then the
// coordinator's, then the folder lock.
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		err = n.closers.close()
		n.log.Info("node.stopped")
	})
	return err
}

// The signed HTTP client is what the orchestrator calls banks through.
var _ orchestrator.Banks = (*bankclient.Client)(nil)
