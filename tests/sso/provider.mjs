// A real OpenID provider for the SSO tests: node's oidc-provider (certified), configured from a JSON
// file named on the command line. Besides the provider's own routes, two test routes:
//   POST /__test/keys   body: a private JWKS; the provider starts signing with it (key rotation)
//   GET  /__test/stats  {"jwks_fetches": n}: how often the gateway fetched the key set
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { default: Provider } = await import(pathToFileURL(config.module).href);
const RESOURCE = "urn:switchboard:gateway";

function account(id) {
  const known = config.accounts[id] || {};
  return { sub: id, email: `${id}@example.test`, email_verified: true, ...known };
}

function build(jwks) {
  const provider = new Provider(config.issuer, {
    clients: [
      {
        client_id: config.client_id,
        client_secret: config.client_secret,
        redirect_uris: [config.redirect_uri],
        response_types: ["code"],
        grant_types: ["authorization_code", "client_credentials"],
        token_endpoint_auth_method: "client_secret_basic",
        id_token_signed_response_alg: "RS256",
      },
    ],
    jwks,
    // PKCE on every authorization request, S256 only (the provider's one method).
    pkce: { required: () => true },
    scopes: ["openid", "email", "profile", "groups"],
    claims: { openid: ["sub"], email: ["email", "email_verified"], groups: [config.role_claim] },
    // The ID token carries the claims itself (not only the userinfo endpoint).
    conformIdTokenClaims: false,
    cookies: { keys: ["switchboard-test-cookie-key"] },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => account(id) }),
    features: {
      devInteractions: { enabled: true }, // its own login form: any login, any password
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        useGrantedResource: () => true,
        // Access tokens as JWTs whose audience is the client id, as SPEC §24 has the gateway check.
        getResourceServerInfo: () => ({
          scope: "llm",
          audience: config.client_id,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "ES256" } },
        }),
      },
    },
    // Access tokens name the person's email and role claim too (as Okta, Entra and Keycloak can).
    extraTokenClaims: async (_ctx, token) => {
      if (token.kind !== "AccessToken" || !token.accountId) return undefined;
      const claims = account(token.accountId);
      return { email: claims.email, [config.role_claim]: claims[config.role_claim] };
    },
    // No consent screen: the test client is first-party.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope("openid email profile groups");
      grant.addOIDCClaims(["email", "email_verified", config.role_claim]);
      grant.addResourceScope(RESOURCE, "llm");
      await grant.save();
      return grant;
    },
  });
  return provider;
}

let provider = build(config.jwks);
let jwksFetches = 0;

function body(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

const server = createServer(async (req, res) => {
  if (req.url === "/__test/keys" && req.method === "POST") {
    provider = build(JSON.parse(await body(req)));
    res.writeHead(204).end();
    return;
  }
  if (req.url === "/__test/stats") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jwks_fetches: jwksFetches }));
    return;
  }
  if (req.url.split("?")[0] === "/jwks") jwksFetches += 1;
  provider.callback()(req, res);
});
server.listen(config.port, "127.0.0.1", () => console.log(`listening ${config.port}`));
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => server.close(() => process.exit(0)));
