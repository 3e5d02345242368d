// The weather example: a tool that asks a weather API for a forecast with `fetch`, passing
// the call's abort signal so a cancelled or timed-out call stops its request too.
const fs = require("node:fs");
const path = require("node:path");
const { createServer, ToolError } = require("@aleph/plugin-sdk");

const { baseUrl } = JSON.parse(fs.readFileSync(path.join(__dirname, "settings.json"), "utf8"));

createServer({
  name: "weather-node",
  tools: {
    forecast: async ({ city, days = 3 }, ctx) => {
      ctx.progress(0, 1, `asking for ${city}`);
      const url = `${baseUrl}/forecast?city=${encodeURIComponent(city)}&days=${days}`;
      const response = await fetch(url, { signal: ctx.signal });
      if (response.status === 404) throw new ToolError(`no forecast for \`${city}\`; check the spelling`);
      if (!response.ok) throw new ToolError(`the weather API answered ${response.status}`);
      const body = await response.json();
      ctx.progress(1, 1, "done");
      return { city, days: body.days };
    },
  },
}).start();
