-- wrk script for the B1 scenarios (bench/b1_http.py writes the data file).
--
--   wrk -t1 -c32 -d10s -s bench/lua/relatorios.lua URL -- <cenario> <dados> <base>
--
-- cenario: s1 (dedup-hot), s2 (all-new), s3 (status), s4 (70% s3, 30% s1).
-- dados: one tenant per "T" line (token, store codes, job ids), followed by
--   its five standard filters as "P" lines (inicio, fim, agrupar, stores).
-- base: where this run's counter of ad-hoc requests starts. Each wrk run gets
--   its own range, so no ad-hoc request of one run repeats one of another.
--
-- At the end it prints one JSON line (prefix "RESULTADO ") that the bench
-- parses: requests, duration, latency percentiles, errors.

local cenario, tenants, base
local contador = 0

-- Ad-hoc periods: counter -> (start day, length) through a bijection modulo
-- M = DIAS * DURACOES, so consecutive requests look random but two counters
-- never give the same period: every ad-hoc request is new, guaranteed, not
-- just likely. Periods fall in 2010..2024 (the standard filters are in 2026)
-- and are shorter than 5 years (RELATORIOS_PERIODO_MAX_ANOS).
local DIAS, DURACOES = 3650, 1800
local M = DIAS * DURACOES
local A = 1000003 -- prime, so coprime with M: c -> (c * A) mod M is a bijection
local ORIGEM = os.time({ year = 2010, month = 1, day = 1, hour = 12 })

local function dia(n)
   return os.date("!%Y-%m-%d", ORIGEM + n * 86400)
end

local function dividir(texto, sep)
   local itens = {}
   if texto == nil or texto == "-" then
      return itens
   end
   for item in string.gmatch(texto, "[^" .. sep .. "]+") do
      itens[#itens + 1] = item
   end
   return itens
end

local function carregar(caminho)
   local lista = {}
   local atual
   for linha in io.lines(caminho) do
      local c = dividir(linha, "\t")
      if c[1] == "T" then
         atual = {
            cabecalhos = {
               ["Authorization"] = "Token " .. c[2],
               ["Content-Type"] = "application/json",
            },
            lojas = dividir(c[3], ","),
            ids = dividir(c[4], ","),
            padroes = {},
         }
         lista[#lista + 1] = atual
      elseif c[1] == "P" then
         atual.padroes[#atual.padroes + 1] = {
            inicio = c[2], fim = c[3], agrupar = c[4], lojas = dividir(c[5], ","),
         }
      end
   end
   return lista
end

local function embaralhar(itens)
   for i = #itens, 2, -1 do
      local j = math.random(i)
      itens[i], itens[j] = itens[j], itens[i]
   end
   return itens
end

local function corpo(inicio, fim, agrupar, lojas)
   local aspas = {}
   for i, codigo in ipairs(lojas) do
      aspas[i] = '"' .. codigo .. '"'
   end
   return string.format(
      '{"inicio":"%s","fim":"%s","agrupar":"%s","lojas":[%s]}',
      inicio, fim, agrupar, table.concat(aspas, ",")
   )
end

local function submeter(t, texto)
   return wrk.format("POST", "/relatorios/vendas", t.cabecalhos, texto)
end

-- A standard filter again: same key, stores in another order (another client).
local function repetido(t)
   local p = t.padroes[math.random(#t.padroes)]
   local lojas = {}
   for i, codigo in ipairs(p.lojas) do
      lojas[i] = codigo
   end
   return submeter(t, corpo(p.inicio, p.fim, p.agrupar, embaralhar(lojas)))
end

-- Never asked before: a period no other request has, a random grouping and
-- a random subset of the tenant's stores in random order (empty = all).
local function novo(t)
   contador = contador + 1
   local x = ((base + contador) * A) % M
   local inicio = x % DIAS
   local duracao = math.floor(x / DIAS)
   local lojas = {}
   for _, codigo in ipairs(t.lojas) do
      if math.random() < 0.3 then
         lojas[#lojas + 1] = codigo
      end
   end
   local agrupar = math.random() < 0.5 and "dia" or "mes"
   return submeter(
      t, corpo(dia(inicio), dia(inicio + duracao), agrupar, embaralhar(lojas))
   )
end

local function status(t)
   local id = t.ids[math.random(#t.ids)]
   return wrk.format("GET", "/relatorios/jobs/" .. id, t.cabecalhos)
end

local function s1(t)
   if math.random() < 0.61 then
      return repetido(t)
   end
   return novo(t)
end

local CENARIOS = {
   s1 = s1,
   s2 = novo,
   s3 = status,
   s4 = function(t)
      if math.random() < 0.7 then
         return status(t)
      end
      return s1(t)
   end,
}

function init(args)
   cenario = CENARIOS[args[1]]
   if cenario == nil then
      error("unknown scenario: " .. tostring(args[1]))
   end
   tenants = carregar(args[2])
   base = tonumber(args[3])
   math.randomseed(base + os.time())
end

function request()
   return cenario(tenants[math.random(#tenants)])
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'RESULTADO {"requisicoes": %d, "duracao_us": %d, "bytes": %d, '
         .. '"p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, '
         .. '"erros_status": %d, "erros_conexao": %d, "erros_leitura": %d, '
         .. '"erros_escrita": %d, "erros_timeout": %d}\n',
      summary.requests, summary.duration, summary.bytes,
      latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency.max, e.status, e.connect, e.read, e.write, e.timeout
   ))
end
