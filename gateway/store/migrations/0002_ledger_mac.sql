-- 2: each ledger row's HMAC (gateway/ledger/chain.py), with a key no agent can reach
ALTER TABLE ledger ADD COLUMN mac TEXT;
