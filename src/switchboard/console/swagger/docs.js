// Swagger UI for /openapi.json, from the files this gateway ships (swagger-ui-dist, pinned in PINNED).
"use strict";
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
