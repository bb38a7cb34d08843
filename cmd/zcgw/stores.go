package main

import (
	"context"

	"github.com/zcgw/zcgw/coordinator/store"
	"github.com/zcgw/zcgw/gateway/node"
)

// located is one database of the data folder, found through the folder's
// node.json store block (node.Stores) the way zcgw serve finds it.
type located struct {
	// Location is what store.Open takes.
	Location string
	// Name names it in messages: zc.db, or "schema zc in postgres://…"
	// (the password masked).
	Name string
	// Exists is false when no node ever created it.
	Exists bool
}

// locate finds a component's database (store.CoordinatorDB,
// store.AdapterDB(bank), …) for the data folder.
func (e *env) locate(ctx context.Context, component string) (located, error) {
	l, err := node.Stores(e.DataDir)
	if err != nil {
		return located{}, err
	}
	return locateIn(ctx, l, component)
}

func locateIn(ctx context.Context, l store.Locator, component string) (located, error) {
	out := located{Location: l.Location(component), Name: l.Name(component)}
	var err error
	out.Exists, err = l.Exists(ctx, component)
	return out, err
}

// folderConfig is the data folder's node.json, or the default a first
// zcgw serve would write (nothing is written), with its Locator.
func (e *env) folderConfig() (node.Config, store.Locator, error) {
	c, found, err := node.LoadConfig(e.DataDir)
	if err != nil {
		return c, store.Locator{}, err
	}
	if !found {
		c = node.DefaultConfig()
	}
	return c, c.Locator(e.DataDir), nil
}

// openCoordinator opens (creating if needed) the data folder's
// coordinator database, where its node.json's store block says.
func (e *env) openCoordinator(ctx context.Context) (*store.DB, error) {
	l, err := node.Stores(e.DataDir)
	if err != nil {
		return nil, err
	}
	return store.OpenCoordinator(ctx, l.Location(store.CoordinatorDB))
}
