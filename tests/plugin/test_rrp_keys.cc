// SPDX-License-Identifier: MIT
/*
 * The RDMA block's one table of keys (src/plugin/rrp_keys.def) against what
 * admins read: every key of the table with its default and range in the
 * sample config (config_samples/ganesha-rdma.conf), in rpcrdma.conf(5)
 * (packaging/man/rpcrdma.conf.5) and in the key table of
 * docs/configuration.md; and no key documented that the table lacks.
 */
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <strings.h>
#include <vector>

extern "C" {
#include "plugin/rrp_config.h"
}

namespace {

std::string slurp(const std::string &rel)
{
	std::ifstream f(std::string(RPCRDMA_SOURCE_DIR) + "/" + rel);
	EXPECT_TRUE(f.good()) << rel << " missing";
	return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/* The default as the docs write it. */
std::string default_text(const rrp_key &k, const rrp_config &d)
{
	const char *s = reinterpret_cast<const char *>(&d) + k.off;
	char buf[32];

	if (k.dflt == RRP_DFLT_AUTO)
		return k.auto_doc;
	switch (k.type) {
	case RRP_KEY_BOOL:
		return rrp_key_get(&d, &k) ? "true" : "false";
	case RRP_KEY_STR:
	case RRP_KEY_FABRIC:
	case RRP_KEY_GROUP:
		return s[0] ? s : "none";
	case RRP_KEY_EXPORTS:
		return "none";
	case RRP_KEY_MODE:
		snprintf(buf, sizeof(buf), "%04llo", (unsigned long long)rrp_key_get(&d, &k));
		return buf;
	default:
		return std::to_string(rrp_key_get(&d, &k));
	}
}

std::string range_text(const rrp_key &k)
{
	char buf[64];

	rrp_key_range(&k, buf, sizeof(buf));
	return buf;
}

const char *type_text(const rrp_key &k)
{
	switch (k.type) {
	case RRP_KEY_BOOL:
		return "bool";
	case RRP_KEY_STR:
		return "string";
	case RRP_KEY_FABRIC:
		return "verbs or soft";
	case RRP_KEY_MODE:
		return "octal mode";
	case RRP_KEY_GROUP:
		return "group";
	case RRP_KEY_EXPORTS:
		return "Export_Ids";
	default:
		return "number";
	}
}

/* Does @text hold @label @value as a whole value ("Default: 64", not the
 * start of "Default: 640" or "Range: 0..655")? */
bool says(const std::string &text, const std::string &label, const std::string &value)
{
	const std::string want = label + " " + value;

	for (size_t at = text.find(want); at != std::string::npos; at = text.find(want, at + 1)) {
		size_t end = at + want.size();
		char next = end < text.size() ? text[end] : ' ';
		char after = end + 1 < text.size() ? text[end + 1] : ' ';

		if (isalnum((unsigned char)next) || next == '_')
			continue;
		if (next == '.' && (isdigit((unsigned char)after) || after == '.'))
			continue;
		return true;
	}
	return false;
}

/* Collapse a paragraph's lines into one (comment marks, troff's font
 * changes and line ends gone) so a value split over lines still reads. */
std::string flat(const std::vector<std::string> &lines)
{
	std::string out;

	for (std::string l : lines) {
		size_t p = l.find_first_not_of(" \t#");
		l = p == std::string::npos ? "" : l.substr(p);
		if (!out.empty())
			out += ' ';
		out += l;
	}
	for (const char *esc : {"\\fR", "\\fB", "\\fI", "\\-"}) {
		for (size_t at; (at = out.find(esc)) != std::string::npos;)
			out.replace(at, strlen(esc), esc[1] == '-' ? "-" : "");
	}
	return out;
}

/* A document's paragraphs: (key, text) */
using Paragraphs = std::vector<std::pair<std::string, std::string>>;

/* The sample config's paragraph for each key: the comment lines above its
 * "Key = " line (written commented out or not), back to a blank line. */
Paragraphs sample_paragraphs(const std::string &text)
{
	Paragraphs out;
	std::vector<std::string> para;
	std::istringstream in(text);

	for (std::string l; std::getline(in, l);) {
		size_t p = l.find_first_not_of(" \t#");
		std::string body = p == std::string::npos ? "" : l.substr(p);
		size_t eq = body.find(" = ");
		size_t name_end = body.find_first_not_of(
			"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

		if (body.empty()) {
			para.clear();
			continue;
		}
		if (eq != std::string::npos && name_end == eq && l.find(';') != std::string::npos) {
			out.push_back({body.substr(0, eq), flat(para) + " " + body});
			para.clear();
			continue;
		}
		para.push_back(l);
	}
	return out;
}

/* rpcrdma.conf(5)'s paragraph for each key of its KEYS section: from
 * ".BR Key " to the next .TP or .SH. */
Paragraphs man_paragraphs(const std::string &text)
{
	Paragraphs out;
	std::vector<std::string> para;
	std::string key;
	std::istringstream in(text);

	auto flush = [&]() {
		if (!key.empty())
			out.push_back({key, flat(para)});
		key.clear();
		para.clear();
	};
	bool keys = false;

	for (std::string l; std::getline(in, l);) {
		if (l.rfind(".SH", 0) == 0)
			keys = l == ".SH KEYS";
		if (l.rfind(".TP", 0) == 0 || l.rfind(".SH", 0) == 0 || !keys) {
			flush();
			continue;
		}
		if (l.rfind(".BR ", 0) == 0 && key.empty() && para.empty()) {
			size_t end = l.find(' ', 4);
			key = l.substr(4, end == std::string::npos ? std::string::npos : end - 4);
			continue;
		}
		para.push_back(l);
	}
	flush();
	return out;
}

std::string find_para(const Paragraphs &paras,
		      const std::string &key)
{
	for (const auto &p : paras)
		if (!strcasecmp(p.first.c_str(), key.c_str()))
			return p.second;
	return "";
}

bool known(const std::string &name)
{
	for (unsigned int i = 0; i < rrp_key_count; i++)
		if (!strcasecmp(rrp_keys[i].name, name.c_str()))
			return true;
	return false;
}

TEST(RrpKeys, TableIsWellFormed)
{
	std::set<std::string> names;

	ASSERT_EQ(rrp_key_count, unsigned(RRP_KEY_COUNT));
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const rrp_key &k = rrp_keys[i];
		std::string lower(k.name);

		for (char &ch : lower)
			ch = char(tolower((unsigned char)ch));
		EXPECT_TRUE(names.insert(lower).second) << k.name << " twice (names ignore case)";
		EXPECT_LE(k.off + k.len, sizeof(rrp_config)) << k.name;
		EXPECT_LE(k.lo, k.hi) << k.name;
		EXPECT_TRUE(k.dflt != RRP_DFLT_AUTO || k.auto_doc) << k.name;
	}
}

/* Every key's default is in its own range (a default the reader would
 * refuse is a typo in the table). */
TEST(RrpKeys, DefaultsAreInRange)
{
	rrp_config d;

	rrp_config_default(&d);
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const rrp_key &k = rrp_keys[i];
		uint64_t v;

		if (k.dflt == RRP_DFLT_AUTO || range_text(k).empty() || k.type == RRP_KEY_EXPORTS)
			continue;
		v = rrp_key_get(&d, &k);
		if (k.type == RRP_KEY_MODE) {
			EXPECT_EQ(v & k.lo, k.lo) << k.name;
			EXPECT_EQ(v & ~k.hi, 0u) << k.name;
			continue;
		}
		EXPECT_TRUE((v >= k.lo && v <= k.hi) || (!v && k.type == RRP_KEY_U32Z))
			<< k.name << " = " << v << " outside " << range_text(k);
	}
}

/*
 * Every key of the table has a paragraph in @paras (of document @what)
 * that says "Default: <its default>" and, where it has one, "Range: <its
 * range>"; ganesha's own keys, documented in their block, go to @core.
 */
void expect_every_key(const char *what, const Paragraphs &paras,
		      const std::function<void(const rrp_key &, const std::string &)> &core)
{
	rrp_config d;

	rrp_config_default(&d);
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const rrp_key &k = rrp_keys[i];
		std::string p = find_para(paras, k.name);

		if (!rrp_key_rdma(&k)) {
			core(k, default_text(k, d));
			continue;
		}
		if (p.empty()) {
			ADD_FAILURE() << k.name << ": no paragraph in " << what;
			continue;
		}
		EXPECT_TRUE(says(p, "Default:", default_text(k, d)))
			<< what << ": " << k.name << ": no \"Default: " << default_text(k, d)
			<< "\" in: " << p;
		if (!range_text(k).empty()) {
			EXPECT_TRUE(says(p, "Range:", range_text(k)))
				<< what << ": " << k.name << ": no \"Range: " << range_text(k)
				<< "\" in: " << p;
		}
	}
	for (const auto &p : paras)
		EXPECT_TRUE(known(p.first))
			<< p.first << " is in " << what << ", not in rrp_keys.def";
}

TEST(RrpKeys, SampleConfigGivesEachKeyItsDefaultAndRange)
{
	std::string text = slurp("config_samples/ganesha-rdma.conf");
	size_t a = text.find("\nRDMA {"), b = text.find("\n}", a);

	ASSERT_NE(a, std::string::npos);
	/* NFS_Port, in NFS_CORE_PARAM, is set to its default */
	expect_every_key("the sample", sample_paragraphs(text.substr(a + 7, b - a - 7)),
			 [&](const rrp_key &k, const std::string &dflt) {
				 EXPECT_NE(text.find(std::string(k.name) + " = " + dflt + ";"),
					   std::string::npos)
					 << k.name;
			 });
}

TEST(RrpKeys, ManPageGivesEachKeyItsDefaultAndRange)
{
	std::string text = slurp("packaging/man/rpcrdma.conf.5");

	/* NFS_Port is named where the page says what else is read */
	expect_every_key("rpcrdma.conf(5)", man_paragraphs(text),
			 [&](const rrp_key &k, const std::string &dflt) {
				 EXPECT_NE(text.find(std::string("\\fB") + k.name + "\\fR"),
					   std::string::npos)
					 << k.name;
				 EXPECT_NE(text.find("(default " + dflt + ")"), std::string::npos)
					 << k.name;
			 });
}

/* docs/configuration.md's table is the table, row for row. */
TEST(RrpKeys, DocsTableMatches)
{
	std::string doc = slurp("docs/configuration.md");
	const std::string begin = "<!-- BEGIN keys (RrpKeys.DocsTableMatches) -->\n";
	const std::string end = "<!-- END keys -->";
	size_t a = doc.find(begin), b = doc.find(end);
	ASSERT_NE(a, std::string::npos);
	ASSERT_NE(b, std::string::npos);
	a += begin.size();

	rrp_config d;
	rrp_config_default(&d);
	std::string want = "| Key | Block | Type | Default | Range |\n|---|---|---|---|---|\n";
	for (unsigned int i = 0; i < rrp_key_count; i++) {
		const rrp_key &k = rrp_keys[i];
		std::string range = range_text(k);

		want += std::string("| `") + k.name + "` | " + k.block + " | " + type_text(k) +
			" | " + default_text(k, d) + (k.dflt == RRP_DFLT_ENG ? " (engine)" : "") +
			" | " + (range.empty() ? "-" : range) + " |\n";
	}
	EXPECT_EQ(doc.substr(a, b - a), want)
		<< "docs/configuration.md's key table differs from src/plugin/rrp_keys.def; "
		   "the table as it should read:\n"
		<< want;
}

} // namespace
