package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/proxy"
	"github.com/agentctx/agentctx/session"
)

// ledgerFlagHelp is the help of report's and replay's --ledger.
const ledgerFlagHelp = "workspace directory, SQLite file or postgres:// URL whose ledger (agentctx savings) holds the session, when it ran through agentctx: its figures replace the replay's (default: "

// findManaged tells whether doc is a session that ran through agentctx
// (proxy.FindManaged), reading the ledger of the store at loc, the
// project's workspace when loc is "" (as agentctx proxy keeps it); a
// location that does not exist holds no ledger (nothing is created). A
// warning goes to w, one line, prefixed with the command's name.
func (e *env) findManaged(ctx context.Context, w io.Writer, cmd, loc string, doc *agentctx.Document) (*proxy.Managed, error) {
	if loc == "" {
		var err error
		if loc, err = e.projectWorkspace(); err != nil {
			return nil, err
		}
	}
	var l session.Ledger
	if isPostgresURL(loc) || exists(loc) {
		ss, err := openSessions(ctx, loc)
		if err != nil {
			return nil, err
		}
		defer ss.Close()
		if l, err = session.LedgerOf(ss); err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
	}
	return e.managedOf(ctx, w, cmd, doc, l)
}

// managedOf is findManaged over a ledger already open (nil: none).
func (e *env) managedOf(ctx context.Context, w io.Writer, cmd string, doc *agentctx.Document, l session.Ledger) (*proxy.Managed, error) {
	m, err := proxy.FindManaged(ctx, doc, l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if m != nil && m.Warning != "" {
		fmt.Fprintf(w, "agentctx %s: warning: %s\n", cmd, m.Warning)
	}
	return m, nil
}
