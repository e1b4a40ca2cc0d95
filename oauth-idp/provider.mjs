// A real OAuth 2.1 / OpenID Connect authorization server for the tests: panva's
// `oidc-provider` (OpenID Certified), pinned in package.json and package-lock.json, set up to
// issue JWT access tokens to two confidential clients by the client_credentials grant, for
// the resource (RFC 8707 resource indicator) the example MCP server stands for.
//
//   node provider.mjs        listens on 127.0.0.1 and a free port; prints the issuer URL
//                            (http://127.0.0.1:PORT) alone on stdout's first line, and logs
//                            on stderr; runs until killed
//
// See README.md beside this file, and tests/tests/mcp_oauth_idp.rs, which starts it.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

import Provider, { errors } from 'oidc-provider';

/// The MCP server's canonical URI: the audience of the tokens it accepts.
const MCP_RESOURCE = 'http://mcp.test/mcp';
/// Another service: a token minted for it must be refused by the MCP server.
const OTHER_RESOURCE = 'http://other.test/api';

/// Every scope the resource servers know. Listed as the provider's scopes, so that a client's
/// `scope` metadata limits what it may ask for (oidc-provider checks a client's allow-list
/// only against the scopes it knows).
const SCOPES = ['build:read', 'build:write', 'deploy:write'];

/// The clients, both confidential (a secret, client_secret_basic) and allowed the
/// client_credentials grant only, each for a tenant (the `tenant` claim of its tokens).
const CLIENTS = [
  { client_id: 'reader-bot', client_secret: 'reader-bot-secret', scope: 'build:read', tenant: 'acme' },
  {
    client_id: 'release-bot',
    client_secret: 'release-bot-secret',
    scope: 'build:read deploy:write',
    tenant: 'acme',
  },
];

const tenants = new Map(CLIENTS.map(({ client_id, tenant }) => [client_id, tenant]));

// A fresh RS256 signing key for every run (without one, oidc-provider would sign with its
// well-known development keys).
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }),
  kid: `rs256-${randomBytes(6).toString('hex')}`,
  alg: 'RS256',
  use: 'sig',
};

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;

  const provider = new Provider(issuer, {
    clients: CLIENTS.map(({ tenant, ...client }) => ({
      ...client,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    jwks: { keys: [signingKey] },
    scopes: ['openid', 'offline_access', ...SCOPES],
    cookies: { keys: [randomBytes(32).toString('hex')] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: false },
      revocation: { enabled: false },
      resourceIndicators: {
        enabled: true,
        // A token request must name its resource; there is no default.
        defaultResource: () => undefined,
        useGrantedResource: () => false,
        getResourceServerInfo(_ctx, resourceIndicator) {
          if (resourceIndicator !== MCP_RESOURCE && resourceIndicator !== OTHER_RESOURCE) {
            throw new errors.InvalidTarget();
          }
          return {
            scope: SCOPES.join(' '),
            audience: resourceIndicator,
            accessTokenTTL: 10 * 60,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    // The tenant a client's tokens act for, as the claim the MCP server reads it from.
    extraTokenClaims(_ctx, token) {
      const tenant = tenants.get(token.clientId);
      return tenant ? { tenant } : undefined;
    },
  });

  provider.on('server_error', (_ctx, error) => console.error('provider: server_error', error));
  provider.on('grant.error', (_ctx, error) => console.error('provider: grant.error', error.message));
  provider.on('grant.success', (ctx) => {
    console.error(`provider: issued a token to ${ctx.oidc.client?.clientId}`);
  });
  server.on('request', provider.callback());
  process.stdout.write(`${issuer}\n`);
});

// Killed by the test (SIGKILL), or ended by a signal: close at once.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => process.exit(0));
}
