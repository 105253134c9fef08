// Weka's RandomForest for bncbench.baselines.weka_forest (compiled there with javac against weka.jar):
//   java -cp weka.jar:CLASSES WekaForest fit TRAIN.arff MODEL [RandomForest options]
//   java -cp weka.jar:CLASSES WekaForest predict TEST.arff MODEL
// "fit" trains on TRAIN (class last) and serialises the forest to MODEL; "predict" prints one line per
// row of TEST: its class distribution, comma-separated in the class attribute's order, at full double
// precision (Weka's own -p -distribution rounds to 3 decimals).
import java.util.Arrays;
import weka.classifiers.trees.RandomForest;
import weka.core.Instances;
import weka.core.SerializationHelper;
import weka.core.converters.ConverterUtils.DataSource;

public class WekaForest {
    public static void main(String[] args) throws Exception {
        Instances data = DataSource.read(args[1]);
        data.setClassIndex(data.numAttributes() - 1);
        if (args[0].equals("fit")) {
            RandomForest forest = new RandomForest();
            forest.setOptions(Arrays.copyOfRange(args, 3, args.length));
            forest.buildClassifier(data);
            SerializationHelper.write(args[2], forest);
            return;
        }
        RandomForest forest = (RandomForest) SerializationHelper.read(args[2]);
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < data.numInstances(); i++) {
            double[] p = forest.distributionForInstance(data.instance(i));
            for (int c = 0; c < p.length; c++) out.append(c == 0 ? "" : ",").append(p[c]);
            out.append('\n');
        }
        System.out.print(out);
    }
}
