package node

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/zcgw/zcgw/coordinator/finality"
	"github.com/zcgw/zcgw/formats/coreacct"
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
	"github.com/zcgw/zcgw/adapter/mq/embedded"
	"github.com/zcgw/zcgw/coordinator/bankapi"
	"github.com/zcgw/zcgw/coordinator/bankclient"
	"github.com/zcgw/zcgw/coordinator/cases"
	"github.com/zcgw/zcgw/coordinator/clock"
	"github.com/zcgw/zcgw/coordinator/domainerr"
	"github.com/zcgw/zcgw/coordinator/orchestrator"
	"github.com/zcgw/zcgw/coordinator/params"
	"github.com/zcgw/zcgw/coordinator/participants"
	"github.com/zcgw/zcgw/coordinator/procid"
	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/coordinator/store"
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

// Bank is one bank of the node: its adapter in front of its simulated core.
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
	Config       Config
	DataDir      string
	URL          string // http://host:port of the listener
	DB           *store.DB
	Orchestrator *orchestrator.Orchestrator
	Workers      []*orchestrator.Orchestrator
	Gateway      *gateway.Server
	Banks        map[string]*Bank
	Keys         *signing.Registry
	Client       *bankclient.Client
	Transport    *embedded.Transport
	// NonceDB is the ingress nonce store (ingress-nonces.db); zcgw bench
	// reads its commit counter.
	NonceDB *store.DB
	// Jobs is the batch-job runner behind POST /internal/cron/{job}, with
	// every job body registered (registerAllJobs; JobCatalog lists them).
	Jobs *scheduler.Runner
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

	lock    *procid.Lock
	kafka   atomic.Pointer[kafkapub.Publisher] // nil until started (readyChecks)
	log     *slog.Logger
	clk     clock.Clock
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	serveWG sync.WaitGroup
	srvErr  error
	stopSrv context.CancelFunc
	closers []func() error
	once    sync.Once
}

type inquiry struct{ l *corelink.Link }

func (i inquiry) Balance(ctx context.Context, acct string) (int64, error) {
	b, err := i.l.Balance(ctx, acct)
	if err == nil && b.Status == "X" {
		return 0, domainerr.New("ACCOUNT_NOT_FOUND", "core has no account "+coreacct.Mask(acct), nil)
	}
	return b.Ledger, err
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
func Start(ctx context.Context, opts Options) (n *Node, err error) {
	if opts.DataDir == "" {
		return nil, errors.New("node: Options.DataDir is required")
	}
	var cfg Config
	if opts.Config != nil {
		cfg = *opts.Config
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	} else if cfg, err = LoadOrInitConfig(opts.DataDir); err != nil {
		return nil, err
	}
	if opts.Addr != "" {
		cfg.Addr = opts.Addr
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Idle <= 0 {
		opts.Idle = 5 * time.Millisecond
	}
	log := zclog.OrDiscard(opts.Logger)
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n = &Node{Config: cfg, DataDir: opts.DataDir, log: log.With("component", "node"), clk: opts.Clock, cancel: cancel, Banks: map[string]*Bank{}}
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	path := func(name string) string { return filepath.Join(opts.DataDir, name) }

	// One node serves a data folder at a time: the lock dies with the
	// process, and a CLI command finds the running node's address in it.
	if n.ID, err = procid.LoadNode(opts.DataDir, opts.Clock); err != nil {
		return n, err
	}
	lockInfo := procid.Info{PID: os.Getpid(), Node: n.ID.Node, Epoch: n.ID.Epoch, Started: clock.Stamp(opts.Clock.Now())}
	if n.lock, err = procid.Acquire(opts.DataDir, lockInfo); err != nil {
		return n, fmt.Errorf("node: %w", err)
	}
	n.closers = append(n.closers, n.lock.Close)

	if n.DB, err = store.OpenCoordinator(ctx, path("zc.db")); err != nil {
		return n, err
	}
	n.closers = append(n.closers, n.DB.Close)
	n.Keys = signing.NewRegistry(n.DB, opts.Clock)
	signer, err := loadSigningKey(ctx, path(SigningKeyFile), n.Keys, opts.Clock)
	if err != nil {
		return n, err
	}
	nonceDB, err := store.Open(ctx, path("ingress-nonces.db"), signing.NonceSchema)
	if err != nil {
		return n, err
	}
	n.closers = append(n.closers, nonceDB.Close)
	n.NonceDB = nonceDB
	nonces := signing.NewDBNonces(nonceDB, opts.Clock)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return n, err
	}
	n.URL = "http://" + ln.Addr().String()
	lockInfo.Addr = ln.Addr().String()
	if err := n.lock.Update(lockInfo); err != nil {
		ln.Close()
		return n, err
	}
	if n.Client, err = bankclient.New(bankclient.Config{BaseURL: n.URL, Signer: signer, Logger: log}); err != nil {
		ln.Close()
		return n, err
	}
	// One FinalityLog for every writer of the coordinator database, so a
	// hook installed on it (the event outbox) sees every append.
	n.FinalityLog = finality.New(opts.Clock)
	n.EventSigner = &events.Signer{KeyID: signer.KeyID, PrivateKey: signer.PrivateKey}
	events.Install(n.FinalityLog, events.Producer{}, n.EventSigner)
	for i := 0; i < cfg.Workers; i++ {
		oc := orchestrator.Config{DB: n.DB, Banks: n.Client, Clock: opts.Clock, Logger: log, WorkerID: n.ID.Owner(fmt.Sprintf("worker-%d", i+1)),
			FinalityLog: n.FinalityLog}
		if opts.Orchestrator != nil {
			opts.Orchestrator(&oc)
		}
		o, err := orchestrator.New(oc)
		if err != nil {
			ln.Close()
			return n, err
		}
		n.Workers = append(n.Workers, o)
	}
	n.Orchestrator = n.Workers[0]
	for _, bc := range cfg.Banks {
		if _, err := n.Orchestrator.OpenPosition(ctx, bc.BankID, orchestrator.VenueBOJ, "JPY", bc.bojOpening()); err != nil {
			ln.Close()
			return n, fmt.Errorf("bank %s: open BOJ account: %w", bc.BankID, err)
		}
	}

	// The queue manager's connection leases and heartbeats measure real
	// elapsed time (its tickers are real), so it runs on the system clock
	// even when the node's business clock is a manual one: a business-clock
	// jump must not make live connections look dead to each other.
	n.Transport = embedded.New(path("mq.db"), embedded.Options{Clock: clock.System{}, Logger: log, PollInterval: 5 * time.Millisecond,
		App: "zcgw serve " + n.ID.String()})
	handlers := map[string]http.Handler{}
	for _, bc := range cfg.Banks {
		b, err := n.openBank(ctx, runCtx, bc, opts)
		if err != nil {
			ln.Close()
			return n, fmt.Errorf("bank %s: %w", bc.BankID, err)
		}
		n.Banks[bc.BankID] = b
		handlers[bc.BankID] = b.Adapter.Handler()
	}
	jobsCfg, err := scheduler.LoadConfig(path(scheduler.ConfigFileName))
	if err != nil {
		ln.Close()
		return n, err
	}
	reg := scheduler.NewRegistry()
	if err := n.registerAllJobs(ctx, reg, opts.Clock, log); err != nil {
		ln.Close()
		return n, err
	}
	led, err := ledger.Open(ctx, ledger.Path(opts.DataDir), opts.Clock)
	if err != nil {
		ln.Close()
		return n, err
	}
	n.closers = append(n.closers, led.Close)
	if n.Jobs, err = scheduler.NewRunner(scheduler.Options{Ledger: led, Registry: reg, Config: jobsCfg, Clock: opts.Clock, Logger: log}); err != nil {
		ln.Close()
		return n, err
	}
	var hmacSecret *signing.Rotating
	if cfg.HMAC != nil {
		hmacSecret = cfg.HMAC.rotating()
		hmacSecret.Logger = log
	}
	n.Gateway, err = gateway.New(gateway.Config{
		Coordinator: n.Orchestrator, DB: n.DB, Participants: n.Orchestrator.Participants(), Banks: handlers,
		Ingress: &signing.Verifier{Registry: n.Keys, Nonces: nonces, Clock: opts.Clock, OwnerType: signing.OwnerZC, HMAC: hmacSecret, Params: params.Reader{DB: n.DB}},
		Queries: &signing.Verifier{Registry: n.Keys, Nonces: signing.NewDBNonces(n.DB, opts.Clock), Clock: opts.Clock, Params: params.Reader{DB: n.DB}},
		APIKeys: cfg.apiKeys(), CronSecret: cfg.CronSecret, AllowUnauthenticatedUI: cfg.AllowUnauthenticatedUI,
		Jobs:  n.Jobs.Handler(),
		DNS:   n.DNS.Handler(),
		Ready: n.readyChecks(nonceDB, led.DB()), Collectors: n.collectors(led), CorePostings: corePostings{n}, FinalityLog: n.FinalityLog,
		Adapters: n.adaptersByBank(),
		Clock:    opts.Clock, Logger: log,
	})
	if err != nil {
		ln.Close()
		return n, err
	}
	fileBanks := make([]filedrop.Bank, 0, len(cfg.Banks))
	for _, bc := range cfg.Banks {
		names, _ := zengin.ParseNameChars(bc.ZenginNames) // checked by Config.Validate
		fileBanks = append(fileBanks, filedrop.Bank{ID: bc.BankID, Names: names})
	}
	if n.Files, err = filedrop.New(filedrop.Config{DB: n.DB, Coordinator: n.Orchestrator, Participants: n.Orchestrator.Participants(),
		Root: opts.DataDir, Banks: fileBanks, Clock: opts.Clock, Logger: log}); err != nil {
		ln.Close()
		return n, err
	}
	srvCtx, stopSrv := context.WithCancel(context.Background())
	n.stopSrv = stopSrv
	n.serveWG.Add(1)
	go func() {
		defer n.serveWG.Done()
		n.srvErr = n.Gateway.Serve(srvCtx, ln)
	}()
	if !opts.NoWorkers {
		for _, o := range n.Workers {
			n.goLoop(func() { o.Run(runCtx, opts.Idle*4) })
		}
		for _, b := range n.Banks {
			n.goLoop(func() {
				// The outbox's own loop: it takes back at once what an earlier
				// start of this node held, and releases its claims on Close.
				err := b.Adapter.Outbox().Run(runCtx, outbox.RunConfig{Identity: n.ID, Worker: "outbox", Idle: opts.Idle})
				if err != nil {
					n.log.Error("node.outbox_stopped", "bank_id", b.ID, "error", err)
				}
			})
		}
		for _, b := range n.Banks { // in-progress adapter requests of dead owners (issue 12)
			n.goLoop(func() { _ = b.Adapter.RunRequestRecovery(runCtx, 0) })
		}
		n.goLoop(func() { sweepNonces(runCtx, nonces) })
		for _, b := range n.Banks {
			if b.Exchange != nil {
				n.goLoop(func() { corePickupLoop(runCtx, b, opts.Clock, n.log) })
			}
		}
	}
	if k := cfg.Kafka; k != nil && len(k.Brokers) > 0 {
		pub, err := startPublisher(ctx, events.New(n.DB, opts.Clock), kafkapub.Config{Brokers: k.Brokers, Topics: kafkapub.Topics{Default: k.DefaultTopic, Families: k.Topics},
			CreateTopics: (*kafkapub.TopicLayout)(k.CreateTopics), Wake: events.WakeOf(n.FinalityLog), Clock: opts.Clock, Logger: log}, n.log)
		if err != nil {
			return n, err
		}
		n.closers = append(n.closers, pub.Close)
		n.kafka.Store(pub)
		n.goLoop(func() {
			if err := pub.Run(runCtx); err != nil && runCtx.Err() == nil {
				n.log.Error("node.publisher_stopped", "error", err)
			}
		})
	}
	if opts.Schedule {
		n.goLoop(func() {
			if err := n.Jobs.Serve(runCtx); err != nil && runCtx.Err() == nil {
				n.log.Error("node.scheduler_stopped", "error", err)
			}
		})
	}
	if opts.WatchFiles {
		w := filedrop.NewWatcher(n.Files, opts.WatchEvery)
		n.goLoop(func() {
			if err := w.Run(runCtx); err != nil && runCtx.Err() == nil {
				n.log.Error("node.filedrop_stopped", "error", err)
			}
		})
	}
	n.log.Info("node.started", "url", n.URL, "banks", len(n.Banks), "workers", len(n.Workers), "data", opts.DataDir)
	return n, nil
}

func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

func (n *Node) openBank(ctx, runCtx context.Context, bc BankConfig, opts Options) (*Bank, error) {
	path := func(name string) string { return filepath.Join(opts.DataDir, name) }
	b := &Bank{ID: bc.BankID, Config: bc}
	var err error
	if b.Core, err = coresim.Open(ctx, coresim.Config{Bank: bc.BankID, DBPath: path("core-" + bc.BankID + ".db"), Clock: opts.Clock, Logger: opts.Logger}); err != nil {
		return nil, err
	}
	n.closers = append(n.closers, b.Core.Close)
	conn, err := n.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	// The core's one consumer: a second one (another process on this queue
	// file) refuses the start, naming the holder. A holder that is an
	// earlier start of this node, killed, is taken over at once once its
	// process is gone; the short retry covers a process still exiting.
	serve := coresim.ServeConfig{Poll: 5 * time.Millisecond}
	for wait := time.Now().Add(2 * time.Second); ; {
		if serve.Claim, err = b.Core.Claim(ctx, conn, serve); err == nil {
			break
		}
		if !errors.Is(err, mq.ErrInUse) || time.Now().After(wait) {
			conn.Close()
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.goLoop(func() {
		if err := b.Core.Serve(runCtx, conn, serve); err != nil && runCtx.Err() == nil {
			n.log.Error("node.core_stopped", "bank_id", bc.BankID, "error", err)
		}
		conn.Close()
	})
	if b.Link, err = corelink.Open(ctx, corelink.Config{Bank: bc.BankID, Transport: n.Transport, Timeout: linkTimeout,
		Clock: opts.Clock, Logger: opts.Logger, Online: b.Core.Online}); err != nil {
		return nil, err
	}
	n.closers = append(n.closers, b.Link.Close)
	if b.Adapter, err = adapter.Open(ctx, adapter.Config{BankID: bc.BankID, DBPath: path("adapter-" + bc.BankID + ".db"),
		Core: b.Link, Inquiry: inquiry{b.Link}, Cases: adapter.CoordinatorCases{DB: n.DB, Cases: cases.New(opts.Clock, opts.Logger, 0)}, Postings: postingReports{n},
		RealTime: bc.RealTime, InquiryTimeout: 2 * time.Second, Identity: n.ID, Clock: opts.Clock, Logger: opts.Logger}); err != nil {
		return nil, err
	}
	n.closers = append(n.closers, b.Adapter.Close)
	if _, err := b.Adapter.InitializeBank(ctx, bankapi.InitializeBankRequest{RequestIDValue: "init-" + bc.BankID}); err != nil {
		return nil, err
	}
	for _, a := range bc.Accounts {
		if bal, err := b.Core.Balance(ctx, a.CoreAccount); err != nil {
			return nil, err
		} else if !bal.Found {
			if err := b.Core.OpenAccount(ctx, a.CoreAccount, a.Name, a.Balance); err != nil {
				return nil, fmt.Errorf("account %s: %w", a.Hash, err)
			}
		}
		if _, err := b.Adapter.Shadow(ctx, a.Hash); err != nil {
			if err := b.Adapter.OpenAccountFromCore(ctx, adapter.Account{Hash: a.Hash, CoreAccount: a.CoreAccount, HolderName: a.Name}); err != nil {
				return nil, fmt.Errorf("account %s: %w", a.Hash, err)
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
	if !bc.RealTime {
		// A batch-window bank takes its BULK and DEFERRED postings as an
		// overnight file (jobs/overnight) instead of one message each.
		b.Overnight = overnightFolders{Inbound: path("overnight/" + bc.BankID + "/inbound"), Results: path("overnight/" + bc.BankID + "/results")}
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

// corePickupLoop is the simulated core's own batch processing: inside its
// batch window it runs the posting files delivered to its inbound folder
// and writes their result files (a real core does this on its side).
func corePickupLoop(ctx context.Context, b *Bank, clk clock.Clock, log *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := corepickup.PickUp(ctx, b.Core, clk, b.Overnight.Inbound, b.Overnight.Results, nil); err != nil && ctx.Err() == nil {
				log.Error("node.core_pickup_failed", "bank_id", b.ID, "error", err)
			}
		}
	}
}

func sweepNonces(ctx context.Context, n *signing.DBNonces) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.Sweep(ctx)
		}
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

// Close shuts the node down: the HTTP server drains in-flight requests
// first, then the workers, drainers and cores stop, then the databases
// close.
func (n *Node) Close() error {
	var err error
	n.once.Do(func() {
		if n.stopSrv != nil {
			n.stopSrv()
			n.serveWG.Wait()
			err = n.srvErr
		}
		n.cancel()
		n.wg.Wait()
		for i := len(n.closers) - 1; i >= 0; i-- {
			if e := n.closers[i](); e != nil && err == nil {
				err = e
			}
		}
		n.log.Info("node.stopped")
	})
	return err
}

// The signed HTTP client is what the orchestrator calls banks through.
var _ orchestrator.Banks = (*bankclient.Client)(nil)
