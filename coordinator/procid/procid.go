package procid

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/zcgw/zcgw/coordinator/clock"
)

// Identity is one running process: its node id and the epoch of this start.
type Identity struct {
	Node  string
	Epoch string
}

// New returns an Identity for node with a fresh epoch taken from clk. The
// epoch is the start instant (compact UTC) plus 4 random bytes, so two
// starts within one clock tick still differ.
func New(node string, clk clock.Clock) Identity {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return Identity{Node: node, Epoch: clk.Now().UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:])}
}

// Ephemeral returns an Identity for a short-lived process (a CLI command, a
// test) that has no persisted node id: role plus random bytes. Its claims
// are never taken back by a node at start; they wait for their lease.
func Ephemeral(role string, clk clock.Clock) Identity {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return New(role+"-"+hex.EncodeToString(b[:]), clk)
}

// LoadNode returns the Identity of the node serving dataDir: the node id
// persisted in <dataDir>/node-id (created on first use) and a fresh epoch.
func LoadNode(dataDir string, clk clock.Clock) (Identity, error) {
	path := filepath.Join(dataDir, "node-id")
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(raw))
		if !validPart(id) {
			return Identity{}, fmt.Errorf("procid: %s holds %q, not a node id", path, id)
		}
		return New(id, clk), nil
	case errors.Is(err, os.ErrNotExist):
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Identity{}, fmt.Errorf("procid: new node id: %w", err)
		}
		id := "node-" + hex.EncodeToString(b[:])
		if err := writeFileSync(path, []byte(id+"\n")); err != nil {
			return Identity{}, fmt.Errorf("procid: write %s: %w", path, err)
		}
		return New(id, clk), nil
	default:
		return Identity{}, fmt.Errorf("procid: read %s: %w", path, err)
	}
}

// Owner is the owner string a claim made by worker of this process stores.
func (id Identity) Owner(worker string) string {
	return id.Node + "/" + id.Epoch + "/" + worker
}

// Prefix is what every owner string of this process starts with.
func (id Identity) Prefix() string { return id.Node + "/" + id.Epoch + "/" }

// NodePrefix is what the owner strings of every start of this node start
// with. A start takes back claims that match NodePrefix but not Prefix.
func (id Identity) NodePrefix() string { return id.Node + "/" }

// String is "<node>/<epoch>".
func (id Identity) String() string { return id.Node + "/" + id.Epoch }

// ParseOwner splits an owner string made by Owner. ok is false for an owner
// written by something else (an older build's worker name, an operator).
func ParseOwner(owner string) (node, epoch, worker string, ok bool) {
	parts := strings.SplitN(owner, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// IsEarlierSelf reports whether owner was written by an earlier start of
// this node (same node id, another epoch): a claim whose holder is dead.
func (id Identity) IsEarlierSelf(owner string) bool {
	node, epoch, _, ok := ParseOwner(owner)
	return ok && node == id.Node && epoch != id.Epoch
}

func validPart(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func writeFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Info is what a serving node writes into its lock file.
type Info struct {
	PID     int    `json:"pid"`
	Node    string `json:"node"`
	Epoch   string `json:"epoch"`
	Addr    string `json:"addr"`
	Started string `json:"started"`
}

// ErrServed is returned by Acquire when another live process holds the
// folder's node lock; the error text names it.
var ErrServed = errors.New("data folder is served by another process")

// Lock is a held node lock. Close releases it.
type Lock struct {
	f    *os.File
	path string
}

// LockPath is the node lock file of dataDir.
func LockPath(dataDir string) string { return filepath.Join(dataDir, "node.lock") }

// Acquire takes the node lock of dataDir for info without waiting. If a live
// process holds it, the error wraps ErrServed and names that process.
func Acquire(dataDir string, info Info) (*Lock, error) {
	path := LockPath(dataDir)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("procid: open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			held, _ := readInfo(path)
			return nil, fmt.Errorf("procid: %w: pid %d, node %s, addr %s (started %s)", ErrServed, held.PID, held.Node, held.Addr, held.Started)
		}
		return nil, fmt.Errorf("procid: lock %s: %w", path, err)
	}
	l := &Lock{f: f, path: path}
	if err := l.Update(info); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Update rewrites the lock file's info (e.g. once the listener's address is
// known).
func (l *Lock) Update(info Info) error {
	b, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("procid: encode lock info: %w", err)
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("procid: truncate %s: %w", l.path, err)
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("procid: write %s: %w", l.path, err)
	}
	return nil
}

// Close releases the lock.
func (l *Lock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}

// Running reports whether a live process holds dataDir's node lock, and its
// info. It probes with a non-blocking shared flock, which fails exactly
// while a serving node holds the exclusive one.
func Running(dataDir string) (Info, bool, error) {
	path := LockPath(dataDir)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, false, nil
	}
	if err != nil {
		return Info{}, false, fmt.Errorf("procid: open %s: %w", path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			info, rerr := readInfo(path)
			if rerr != nil {
				return Info{}, true, rerr
			}
			return info, true, nil
		}
		return Info{}, false, fmt.Errorf("procid: probe %s: %w", path, err)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return Info{}, false, nil
}

func readInfo(path string) (Info, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Info{}, fmt.Errorf("procid: read %s: %w", path, err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return Info{}, fmt.Errorf("procid: decode %s: %w", path, err)
	}
	return info, nil
}
