package statusapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/trainmaster/master/go/discovery"
)

// ClientConfig configures a Client. The texts of its errors name the
// flags of `master watch` that mend them (-token-file, -tls-ca,
// -tls-cert).
type ClientConfig struct {
	// TLS, if set, speaks HTTPS; its Certificates are the client
	// certificate offered.
	TLS *tls.Config
	// Token, if set, is sent as "Authorization: Bearer <token>".
	Token string
	// Timeout bounds each request; default 5 s.
	Timeout time.Duration
}

// Client fetches /status.json from masters' side doors, directly (no
// proxy). It is safe for concurrent use.
type Client struct {
	http   *http.Client
	scheme string
	token  string
	cert   bool // a client certificate is offered
}

// NewClient returns a Client.
func NewClient(cfg ClientConfig) *Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	c := &Client{scheme: "http", token: cfg.Token}
	if cfg.TLS != nil {
		transport.TLSClientConfig = cfg.TLS
		c.scheme, c.cert = "https", len(cfg.TLS.Certificates) > 0
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	c.http = &http.Client{Transport: transport, Timeout: cfg.Timeout}
	return c
}

// maxStatusBytes bounds the answer read from a page (a status with the
// most trainers shown is far smaller).
const maxStatusBytes = 16 << 20

// permanentError is an answer that asking again will not change.
type permanentError struct{ error }

func permanentf(format string, args ...any) error {
	return permanentError{errors.Errorf(format, args...)}
}

// Permanent says whether err is an answer that asking again will not
// change: a lock the client cannot open, an address that is no status
// page, a leader that serves none.
func Permanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// Status fetches the status of the side door at addr (host:port). Its
// errors name the page's URL, but for a master that does not answer: the
// caller says the address then.
func (c *Client) Status(ctx context.Context, addr string) (Status, error) {
	var st Status
	url := c.scheme + "://" + addr + "/status.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, permanentf("the status page %s: %v", url, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return st, c.transportError(url, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxStatusBytes)
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(body).Decode(&st); err != nil {
			return st, errors.Wrapf(err, "the status page %s", url)
		}
		return st, nil
	}
	return st, c.refusal(resp, body, url, addr)
}

// refusal is the error of an answer other than 200.
func (c *Client) refusal(resp *http.Response, body io.Reader, url, addr string) error {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		if c.token == "" {
			return permanentf("the status page %s wants the master's token: give -token-file", url)
		}
		return permanentf("the status page %s refused the token of -token-file", url)
	case http.StatusForbidden:
		if c.cert {
			return permanentf("the status page %s refused the client certificate of -tls-cert", url)
		}
		return permanentf("the status page %s wants a client certificate signed by the master's client CA: give -tls-cert and -tls-key", url)
	case http.StatusNotFound:
		return permanentf("%s is not a master's status page (404 Not Found); give the master's -http-addr", url)
	case http.StatusBadRequest:
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		if strings.Contains(string(msg), "HTTPS") {
			return permanentf("the status page at %s speaks HTTPS: give -tls-ca with the CA of the master's certificate", addr)
		}
		return permanentf("the status page %s answered %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	return errors.Errorf("the status page %s answered %s", url, resp.Status)
}

// transportError tells the TLS troubles, which are permanent, from a
// master that does not answer.
func (c *Client) transportError(url string, err error) error {
	var verify *tls.CertificateVerificationError
	var op *net.OpError
	var uerr *neturl.Error
	switch {
	case errors.Is(err, http.ErrSchemeMismatch):
		return permanentf("the status page %s speaks plain HTTP, not HTTPS: drop -tls-ca", url)
	case errors.As(err, &verify):
		return permanentf("the certificate of the status page %s is not to be trusted: %v (give -tls-ca the CA that signed it)", url, verify.Err)
	case errors.As(err, &op) && op.Op == "remote error": // a TLS alert from the page
		if c.cert {
			return permanentf("the status page %s refused the client certificate of -tls-cert: %v", url, op.Err)
		}
		return permanentf("the status page %s refused the TLS handshake: %v", url, op.Err)
	case errors.As(err, &uerr):
		return uerr.Err // the URL is said by the caller
	}
	return err
}

// LeaderPage returns the address of the leading master's status page:
// that of the first of masters (discovery.Masters lists the leader first),
// "" when there are none. A leader that serves no page is a permanent
// error.
func LeaderPage(masters []discovery.Master) (string, error) {
	switch {
	case len(masters) == 0:
		return "", nil
	case masters[0].HTTP == "":
		return "", permanentf("the leading master (%s) serves no status page: start the masters with -http-addr, or give -addr", MasterName(masters[0]))
	}
	return masters[0].HTTP, nil
}

// MasterName names m by its host, and its pid when known.
func MasterName(m discovery.Master) string {
	if m.PID != 0 {
		return fmt.Sprintf("%s, pid %d", m.Host, m.PID)
	}
	return m.Host
}
