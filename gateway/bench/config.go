package bench

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zcgw/zcgw/coordinator/signing"
	"github.com/zcgw/zcgw/gateway/node"
)

// LaneShare is one lane's share of the transfers (percent).
type LaneShare struct {
	Lane    string
	Percent int
}

// supportedLanes are the lanes bench can drive to a terminal state without
// a batch job: both settle online through the orchestrator (STANDARD with
// the authority and name checks EXPRESS skips). BULK and DEFERRED wait
// for their batch window (jobs/batchwindow): a later mode.
var supportedLanes = map[string]bool{"EXPRESS": true, "STANDARD": true}

// ParseLanes parses "EXPRESS=80,STANDARD=20"; the shares must sum to 100.
func ParseLanes(s string) ([]LaneShare, error) {
	var out []LaneShare
	sum := 0
	for _, part := range strings.Split(s, ",") {
		name, pct, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("--lanes %q: %q is not LANE=PERCENT", s, part)
		}
		p, err := strconv.Atoi(pct)
		if err != nil || p < 0 || p > 100 {
			return nil, fmt.Errorf("--lanes %q: %s: percent %q is not an integer 0..100", s, name, pct)
		}
		name = strings.ToUpper(name)
		if !supportedLanes[name] {
			return nil, fmt.Errorf("--lanes %q: lane %s is not supported by zcgw bench yet (only EXPRESS and STANDARD settle without a batch job)", s, name)
		}
		for _, l := range out {
			if l.Lane == name {
				return nil, fmt.Errorf("--lanes %q: lane %s is given twice", s, name)
			}
		}
		out = append(out, LaneShare{Lane: name, Percent: p})
		sum += p
	}
	if sum != 100 {
		return nil, fmt.Errorf("--lanes %q: the shares sum to %d, want 100", s, sum)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Percent > out[j].Percent })
	return out, nil
}

// laneOf picks the lane of transfer i by the shares, spread evenly and
// deterministically: the first lane whose cumulative share C gains a
// transfer at i (floor((i+1)C/100) > floor(iC/100)). With two lanes the
// first n transfers hold exactly floor(n*share/100) of the first lane,
// so even a short run mixes its lanes.
func laneOf(lanes []LaneShare, i int) string {
	cum := 0
	for _, l := range lanes {
		cum += l.Percent
		if (i+1)*cum/100 > i*cum/100 {
			return l.Lane
		}
	}
	return lanes[len(lanes)-1].Lane
}

// Deployment is what the node of a run is deployed on besides its data
// folder: the queue manager and the store. A run of several nodes gives
// each node the same Deployment.
type Deployment struct {
	// MQ is the node's queue manager (nil: the embedded queue store).
	MQ *node.MQConfig
	// Store is where the node's databases live (nil: SQLite files in the
	// data folder). zcgw bench --store postgres gives it a fresh schema
	// prefix of its own.
	Store *node.StoreConfig
}

// NodeConfig is the one place a run builds its node's configuration: the
// banks and keys of base (Config or FileConfig) on d's queue manager and
// store.
func (d Deployment) NodeConfig(base node.Config) node.Config {
	base.MQ, base.Store = d.MQ, d.Store
	return base
}

// accountsPerBank is how many funded customer accounts each bank has.
const accountsPerBank = 3

// openingBalance is each customer account's opening balance (yen).
const openingBalance = 1_000_000_000

// Config builds a node configuration with k real-time banks (001, 002, …),
// accountsPerBank funded accounts each, and one API key per bank, extending
// node.DefaultConfig (whose secrets and operator key it keeps).
func Config(k int) node.Config {
	c := node.DefaultConfig()
	c.Addr = "127.0.0.1:0"
	tmpl := c.Banks[0]
	var keys []node.APIKey
	for _, key := range c.APIKeys {
		if key.Scope != signing.ScopeParticipant {
			keys = append(keys, key)
		}
	}
	c.Banks = nil
	for i := 0; i < k; i++ {
		id := fmt.Sprintf("%03d", i+1)
		b := node.BankConfig{BankID: id, Name: "Bank " + id, HLimit: tmpl.HLimit, RealTime: true}
		for n := 1; n <= accountsPerBank; n++ {
			b.Accounts = append(b.Accounts, node.Account{Hash: fmt.Sprintf("h:%s-%04d", id, n),
				CoreAccount: fmt.Sprintf("100-1-%07d", n), Name: fmt.Sprintf("CUSTOMER %c%d", 'A'+i%26, n), Balance: openingBalance})
		}
		c.Banks = append(c.Banks, b)
		secret := node.DefaultConfig().APIKeys[0].Secret // a fresh random secret
		keys = append(keys, node.APIKey{Scope: signing.ScopeParticipant, BankID: id, Name: "bank-" + id, Secret: secret})
	}
	c.APIKeys = keys
	return c
}
