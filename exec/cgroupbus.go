//go:build linux

package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// busTimeout bounds each call to systemd: a daemon that cannot have an
// answer soon goes on without delegation rather than hang at start.
const busTimeout = 10 * time.Second

// systemdBus is cgroupBus over D-Bus, with go-systemd's client.
type systemdBus struct{ c *sddbus.Conn }

// dialSystemd connects to the system's systemd: its private socket
// (root, and no dbus-daemon needed), else the system bus.
func dialSystemd() (cgroupBus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	c, err := sddbus.NewSystemdConnectionContext(ctx)
	if err != nil {
		var err2 error
		if c, err2 = sddbus.NewSystemConnectionContext(ctx); err2 != nil {
			return nil, fmt.Errorf("systemd's private socket: %v; system bus: %v", err, err2)
		}
	}
	return &systemdBus{c: c}, nil
}

func (b *systemdBus) Close() { b.c.Close() }

// Delegated reads the Delegate property of a service or scope.
func (b *systemdBus) Delegated(unit string) (bool, error) {
	typ := "Service"
	if strings.HasSuffix(unit, ".scope") {
		typ = "Scope"
	}
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	p, err := b.c.GetUnitTypePropertyContext(ctx, unit, typ, "Delegate")
	if err != nil {
		return false, err
	}
	v, ok := p.Value.Value().(bool)
	if !ok {
		return false, fmt.Errorf("unit %s: Delegate is %s", unit, p.Value.String())
	}
	return v, nil
}

// StartScope asks systemd for a transient scope holding pid, with
// Delegate=yes, and waits for its start job.
func (b *systemdBus) StartScope(name, slice string, pid int) error {
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	props := []sddbus.Property{
		sddbus.PropDescription("hpc node daemon and its job steps"),
		sddbus.PropPids(uint32(pid)),
		{Name: "Delegate", Value: godbus.MakeVariant(true)},
	}
	if slice != "" {
		props = append(props, sddbus.PropSlice(slice))
	}
	done := make(chan string, 1)
	if _, err := b.c.StartTransientUnitContext(ctx, name, "replace", props, done); err != nil {
		var de godbus.Error
		if errors.As(err, &de) && de.Name == "org.freedesktop.systemd1.UnitExists" {
			return errUnitExists
		}
		return err
	}
	select {
	case res := <-done:
		if res != "done" {
			return fmt.Errorf("start job of %s: %s", name, res)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("start job of %s: %w", name, ctx.Err())
	}
}
