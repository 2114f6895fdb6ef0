package proxy

import (
	"github.com/agentctx/agentctx/internal/lib/family"
	"github.com/agentctx/agentctx/internal/lib/family/anthropic"
	"github.com/agentctx/agentctx/internal/lib/family/gemini"
	"github.com/agentctx/agentctx/internal/lib/family/openaichat"
	"github.com/agentctx/agentctx/internal/lib/family/responses"
)

// families are the API families the proxy serves (internal/lib/family),
// in the order that breaks ties between their claims on a request: the
// first, Anthropic, is also where a request none claims goes. Adding a
// family is its package and one entry here.
var families = mustRegistry(anthropic.Family{}, openaichat.Family{}, responses.Family{}, gemini.Family{})

func mustRegistry(fams ...family.Family) *family.Registry {
	r, err := family.NewRegistry(fams...)
	if err != nil {
		panic(err)
	}
	return r
}

// familyOf returns the family of an API, nil for "" (a request the proxy
// does not edit) or an API it does not serve.
func familyOf(api API) family.Family {
	if api == "" {
		return nil
	}
	return families.Lookup(string(api))
}

// apiOf returns the API of a family, "" for nil.
func apiOf(f family.Family) API {
	if f == nil {
		return ""
	}
	return API(f.Info().Name)
}
