package images

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
)

// configureNetwork brings up lo and the virtio NIC with the address and default
// route of qemu's user networking. Loopback aliases (see loopbackAliases) turn
// lo's 127.0.0.0/8 into 127.0.0.1/32 plus one /32 per alias, so every other
// loopback address is routed out of the VM, to the host's loopback.
func configureNetwork(aliases []string) error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return err
	}
	eth, err := waitForNIC(5 * time.Second)
	if err != nil {
		return err
	}
	addr, err := netlink.ParseAddr(GuestAddr)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(eth, addr); err != nil {
		return err
	}
	// A gratuitous ARP when the link comes up tells qemu's user networking
	// the guest's MAC address. It would otherwise learn it only from the
	// guest's first packet, and hold the connections it forwards in the
	// meantime: a client that connected early would wait seconds for its
	// answer.
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+eth.Attrs().Name+"/arp_notify", []byte("1"), 0); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(eth); err != nil {
		return err
	}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.ParseIP(Gateway)}); err != nil {
		return fmt.Errorf("default route: %w", err)
	}
	if len(aliases) == 0 {
		return nil
	}
	// Without route_localnet the kernel drops packets to or from 127/8 on a
	// real interface as martians.
	for _, dev := range []string{"all", "default", eth.Attrs().Name} {
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+dev+"/route_localnet", []byte("1"), 0); err != nil {
			return err
		}
	}
	wide, err := netlink.ParseAddr("127.0.0.1/8")
	if err != nil {
		return err
	}
	if err := netlink.AddrDel(lo, wide); err != nil {
		return fmt.Errorf("narrow lo: %w", err)
	}
	for _, a := range append([]string{"127.0.0.1"}, aliasHosts(aliases)...) {
		ad, err := netlink.ParseAddr(a + "/32")
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(lo, ad); err != nil {
			return fmt.Errorf("lo %s: %w", a, err)
		}
	}
	return nil
}

// waitForNIC returns the first network device that is not loopback; virtio_net
// registers it while its module loads, but it is not a promise.
func waitForNIC(timeout time.Duration) (netlink.Link, error) {
	deadline := time.Now().Add(timeout)
	for {
		links, err := netlink.LinkList()
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			if l.Attrs().Flags&net.FlagLoopback == 0 && l.Type() == "device" {
				return l, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, errors.New("no network device (is virtio-net attached?)")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// loopbackAliases returns the loopback addresses other than 127.0.0.1 that the
// role's data addresses (--data-addr, --network NAME=ADDR) name, with their
// ports: "127.0.0.11:7000".
//
// This is how TaskManagers in VMs reach each other through qemu's user
// networking, where no VM can be dialled at its own address: a TaskManager
// advertises the address it listens on, so it listens on an address that means
// the same in every VM and on the host. The host forwards 127.0.0.11:7000 to
// this VM (image run --forward 127.0.0.11:7000:7000); in this VM 127.0.0.11 is
// local, and in every other VM it is routed out to the host, whose forward brings
// it here. qemu delivers forwarded connections to 10.0.2.15, so proxyAlias
// relays them to the alias.
func loopbackAliases(role []string) []string {
	var out []string
	add := func(addr string) {
		host, port, err := net.SplitHostPort(addr)
		ip := net.ParseIP(host)
		if err != nil || ip == nil || !ip.IsLoopback() || ip.To4() == nil || ip.Equal(net.IPv4(127, 0, 0, 1)) || port == "0" {
			return
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	for i := 0; i < len(role); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(role[i], "-"), "=")
		if !strings.HasPrefix(role[i], "-") || (name != "data-addr" && name != "network") {
			continue
		}
		if !hasValue && i+1 < len(role) {
			i++
			value = role[i]
		}
		if name == "network" {
			_, value, _ = strings.Cut(value, "=")
		}
		add(value)
	}
	return out
}

// aliasHosts returns the addresses of aliases ("127.0.0.11:7000" -> "127.0.0.11"),
// once each.
func aliasHosts(aliases []string) []string {
	seen := map[string]bool{}
	var hosts []string
	for _, a := range aliases {
		h, _, _ := net.SplitHostPort(a)
		if !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// proxyAlias relays connections that qemu forwards to the guest's address on the
// alias's port to the alias, where the role listens.
func proxyAlias(log *slog.Logger, alias string) error {
	_, port, _ := net.SplitHostPort(alias)
	guest, _, _ := strings.Cut(GuestAddr, "/")
	ln, err := net.Listen("tcp", net.JoinHostPort(guest, port))
	if err != nil {
		return fmt.Errorf("relay to %s: %w", alias, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				log.Error("relay stopped", "alias", alias, "err", err)
				return
			}
			go relay(c, alias)
		}
	}()
	return nil
}

func relay(c net.Conn, to string) {
	defer c.Close()
	var d net.Dialer
	u, err := d.Dial("tcp", to)
	for deadline := time.Now().Add(5 * time.Second); err != nil && time.Now().Before(deadline); {
		// The role may not listen yet: the host forwards as soon as qemu starts.
		time.Sleep(20 * time.Millisecond)
		u, err = d.Dial("tcp", to)
	}
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}
