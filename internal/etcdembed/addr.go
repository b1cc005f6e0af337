package etcdembed

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/pkg/errors"
	"go.etcd.io/etcd/client/pkg/v3/types"
)

// FreeLoopbackAddr returns "127.0.0.1:port" with a port that was free a
// moment ago. Use it to build an InitialCluster before starting its members.
func FreeLoopbackAddr() (string, error) {
	return freeAddr("127.0.0.1")
}

func freeAddr(host string) (string, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", errors.WithMessagef(err, "find a free port on %s", host)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", err
	}
	return addr, nil
}

func portIsAuto(addr string) bool {
	if addr == "" {
		return true
	}
	_, port, err := net.SplitHostPort(addr)
	return err == nil && (port == "" || port == "0")
}

// resolved is a Config with real ports and the URLs derived from them.
type resolved struct {
	Config
	listenClient, advertiseClient url.URL
	listenPeer                    url.URL
	advertisePeer                 []url.URL
}

// resolve picks free ports for port-0 addresses and derives the URLs.
func (cfg Config) resolve() (resolved, error) {
	r := resolved{Config: cfg}
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	listen, advertise, err := resolveAddr(cfg.ClientAddr)
	if err != nil {
		return r, errors.WithMessagef(err, "etcdembed: ClientAddr %q", cfg.ClientAddr)
	}
	r.ClientAddr = listen
	r.listenClient = url.URL{Scheme: scheme, Host: listen}
	r.advertiseClient = url.URL{Scheme: scheme, Host: advertise}

	if cfg.InitialCluster == "" {
		peer := cfg.PeerAddr
		if peer == "" {
			peer = DefaultPeerAddr
		}
		listen, advertise, err := resolveAddr(peer)
		if err != nil {
			return r, errors.WithMessagef(err, "etcdembed: PeerAddr %q", peer)
		}
		r.PeerAddr = listen
		r.listenPeer = url.URL{Scheme: "http", Host: listen}
		r.advertisePeer = []url.URL{{Scheme: "http", Host: advertise}}
		r.InitialCluster = cfg.Name + "=" + r.advertisePeer[0].String()
		return r, nil
	}

	m, err := types.NewURLsMap(cfg.InitialCluster)
	if err != nil {
		return r, errors.WithMessagef(err, "etcdembed: InitialCluster %q", cfg.InitialCluster)
	}
	mine := m[cfg.Name]
	if len(mine) == 0 {
		return r, errors.Errorf("etcdembed: InitialCluster %q has no entry for member %q", cfg.InitialCluster, cfg.Name)
	}
	for _, u := range mine {
		if u.Scheme != "http" {
			return r, errors.Errorf("etcdembed: InitialCluster entry %s of member %q: peer URLs must be http", u.String(), cfg.Name)
		}
	}
	r.advertisePeer = mine
	peer := cfg.PeerAddr
	if portIsAuto(peer) {
		peer = mine[0].Host
	}
	listen, _, err = resolveAddr(peer)
	if err != nil {
		return r, errors.WithMessagef(err, "etcdembed: PeerAddr %q", peer)
	}
	r.PeerAddr = listen
	r.listenPeer = url.URL{Scheme: "http", Host: listen}
	return r, nil
}

// resolveAddr returns the address to listen on and the one to advertise for
// a host:port: an empty host becomes 127.0.0.1, port 0 a free port, and an
// unspecified IP (0.0.0.0, ::) is advertised as 127.0.0.1.
func resolveAddr(addr string) (listen, advertise string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" || port == "0" {
		free, err := freeAddr(host)
		if err != nil {
			return "", "", err
		}
		if _, port, err = net.SplitHostPort(free); err != nil {
			return "", "", err
		}
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", "", errors.Errorf("bad port %q", port)
	}
	listen = net.JoinHostPort(host, port)
	advertise = listen
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		advertise = net.JoinHostPort("127.0.0.1", port)
	}
	return listen, advertise, nil
}

func (r resolved) describe() string {
	return fmt.Sprintf("etcd member %q (data dir %s, client %s, peer %s)",
		r.Name, r.Dir, r.listenClient.String(), r.listenPeer.String())
}
