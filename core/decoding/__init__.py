"""The round and everything it calls: drafters, the tier rule, scorers and caches, verification rules, costs."""
