import java.io.BufferedReader;
import java.io.FileReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.Locale;

import hdp.ProbabilityTree;

/**
 * Fits the context trees of one fold with the authors' HDP library (github.com/fpetitjean/HDP, built by the
 * user at the commit to compare; never part of bncbench) and writes, for every test row and class, the sum over
 * the attributes of log P(x_i | y, parents_i): the classifier of the HDP paper without its class prior, which
 * benchmarks/authors_hdp.py adds.
 *
 * A tree is built as the paper's kDB-HDP classifier built it (MMaLL's wdBayesParametersTreePYP, as published
 * in its descendants): new ProbabilityTree(|X_i|, {|Y|, |parent_1|, ...}, iterations, tying), the class first,
 * then the parents in the order given (decreasing I(X_i; parent | Y)); every training row added by
 * addObservation({x_i, y, parent values}); smoothTree(); then query({y, parent values}) walks down to the
 * deepest node that has data. The constructor and calls exist with the same meaning at the paper's commit
 * (2017-08) and at the head.
 *
 * Input (whitespace-separated integers, one problem a file): n_attributes n_classes iterations tying; the
 * cardinality of each attribute; for each attribute, its number of parents then the parents; the number of
 * training rows, then the rows (attribute codes, then the class code); the number of test rows, then the rows
 * (attribute codes, -1 for a value unseen in training, which carries no evidence; then a class code, unused).
 * A test row's parent value unseen in training stops the walk at that level, as an absent child does.
 *
 * Output: one line per test row, n_classes numbers; then a line "seconds <CPU seconds of the smoothing>".
 */
public class AuthorsHdpDriver {

	public static void main(String[] args) throws IOException {
		if (args.length != 2) {
			System.err.println("usage: AuthorsHdpDriver <problem file> <output file>");
			System.exit(2);
		}
		Tokens in = new Tokens(args[0]);
		int nAttributes = in.next(), nClasses = in.next(), iterations = in.next(), tying = in.next();
		int[] cards = in.next(nAttributes);
		int[][] parents = new int[nAttributes][];
		for (int u = 0; u < nAttributes; u++) {
			parents[u] = in.next(in.next());
		}
		int[][] train = rows(in, nAttributes + 1);
		int[][] test = rows(in, nAttributes + 1);

		long start = java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
		Object sharedStirling = sharedStirlingNumbers(train.length);
		ProbabilityTree[] trees = new ProbabilityTree[nAttributes];
		for (int u = 0; u < nAttributes; u++) {
			int[] arities = new int[1 + parents[u].length];
			arities[0] = nClasses;
			for (int p = 0; p < parents[u].length; p++) {
				arities[1 + p] = cards[parents[u][p]];
			}
			trees[u] = new ProbabilityTree(cards[u], arities, iterations, tying);
			for (int[] row : train) {
				int[] point = new int[2 + parents[u].length];
				point[0] = row[u];
				point[1] = row[nAttributes];
				for (int p = 0; p < parents[u].length; p++) {
					point[2 + p] = row[parents[u][p]];
				}
				trees[u].addObservation(point);
			}
			if (sharedStirling != null) {
				invoke(trees[u], "setLogStirlingCache", sharedStirling);
			}
			trees[u].smoothTree();
		}
		double seconds = (java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() - start) / 1e9;

		try (PrintWriter out = new PrintWriter(args[1])) {
			for (int[] row : test) {
				double[] logJoint = new double[nClasses];
				for (int u = 0; u < nAttributes; u++) {
					if (row[u] < 0) {
						continue;
					}
					int depth = 0;
					while (depth < parents[u].length && row[parents[u][depth]] >= 0) {
						depth++;
					}
					for (int y = 0; y < nClasses; y++) {
						int[] context = new int[1 + depth];
						context[0] = y;
						for (int p = 0; p < depth; p++) {
							context[1 + p] = row[parents[u][p]];
						}
						logJoint[y] += Math.log(trees[u].query(context)[row[u]]);
					}
				}
				StringBuilder line = new StringBuilder();
				for (int y = 0; y < nClasses; y++) {
					line.append(y == 0 ? "" : " ").append(String.format(Locale.ROOT, "%.17g", logJoint[y]));
				}
				out.println(line);
			}
			out.println(String.format(Locale.ROOT, "seconds %.6f", seconds));
		}
	}

	/**
	 * From October 2018 on, the library tabulates Stirling numbers in a generator of about 110 MB that its
	 * users create once and share between trees (hdp.logStirling.LogStirlingFactory; MMaLL's classifiers do);
	 * a tree that is given none creates its own and keeps it. Before, each tree tabulates only what it needs.
	 * Returns the shared generator, or null for a version without the factory.
	 */
	private static Object sharedStirlingNumbers(int rows) {
		try {
			Class<?> factory = Class.forName("hdp.logStirling.LogStirlingFactory");
			return factory.getMethod("newLogStirlingGenerator", long.class, double.class).invoke(null, (long) rows, 0.0);
		} catch (ClassNotFoundException e) {
			return null;
		} catch (ReflectiveOperationException e) {
			throw new IllegalStateException("cannot create the library's Stirling numbers", e);
		}
	}

	private static void invoke(Object target, String method, Object argument) {
		for (java.lang.reflect.Method candidate : target.getClass().getMethods()) {
			if (candidate.getName().equals(method) && candidate.getParameterCount() == 1
					&& candidate.getParameterTypes()[0].isInstance(argument)) {
				try {
					candidate.invoke(target, argument);
					return;
				} catch (ReflectiveOperationException e) {
					throw new IllegalStateException("calling " + method, e);
				}
			}
		}
		throw new IllegalStateException("the library has no " + method + " taking " + argument.getClass());
	}

	private static int[][] rows(Tokens in, int width) throws IOException {
		int[][] rows = new int[in.next()][];
		for (int i = 0; i < rows.length; i++) {
			rows[i] = in.next(width);
		}
		return rows;
	}

	/** Whitespace-separated integers of a file, read one at a time. */
	private static final class Tokens {
		private final java.io.StreamTokenizer tokens;

		Tokens(String path) throws IOException {
			tokens = new java.io.StreamTokenizer(new BufferedReader(new FileReader(path)));
			tokens.resetSyntax();
			tokens.wordChars('-', '-');
			tokens.wordChars('0', '9');
			tokens.whitespaceChars(0, ' ');
		}

		int next() throws IOException {
			if (tokens.nextToken() != java.io.StreamTokenizer.TT_WORD) {
				throw new IOException("the problem file ends early or holds a non-integer (line " + tokens.lineno() + ")");
			}
			return Integer.parseInt(tokens.sval);
		}

		int[] next(int n) throws IOException {
			int[] values = new int[n];
			for (int i = 0; i < n; i++) {
				values[i] = next();
			}
			return values;
		}
	}
}
